/** A time as the API shows it: whole seconds since the Unix epoch. */
export const unixSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

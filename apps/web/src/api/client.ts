import { createPlatformClient, PlatformError } from "@platform/client";
import { ConsoleSession } from "./session.ts";

/** The one sign-in of this page. */
export const session = new ConsoleSession();

/** The platform's typed API, as this page's signed-in user. */
export const api = createPlatformClient({ url: location.origin, tokens: session });

/** The API before sign-in: its open procedures (sign-up, sign-in, password reset, invitations). */
export const openApi = createPlatformClient({ url: location.origin, anonymous: true });

export { PlatformError };

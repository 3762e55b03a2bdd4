/** Helpers for tests outside core (`@platform/core/testing`); never imported by the platform itself. */
export { totpCodeFromUrl } from "./accounts/testing.ts";
export { eventually } from "./broker/test-backends.ts";

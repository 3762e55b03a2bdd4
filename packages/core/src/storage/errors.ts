/** Error statuses of storage operations, as their OpenAPI documents them. */
export const storageErrors = {
  400: "`validation_error`: invalid input",
  401: "`unauthorized`: credential missing or invalid",
  403: "Restricted API key not allowed on this path",
  404: "`not_found`: stream, bucket or key missing",
  500: "`internal_error`: server failure",
} as const;

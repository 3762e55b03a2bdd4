/**
 * Mapping paths and how a request path finds its mapping. A mapping path is `/` or
 * segments joined by `/`: literal segments (letters, digits, `-`, `.`, `_`, `~`) or
 * parameters `:name`, which match any one non-empty segment of a request and hand its
 * decoded text to the flow as `params.name` (`/orders/:id` matches `/orders/42`).
 * Where several mappings of a method match, the one with a literal segment where the
 * others have a parameter wins, earliest segment first (`/orders/new` over `/orders/:id`).
 */

const LITERAL = /^[A-Za-z0-9._~-]+$/;
const PARAMETER = /^:[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_PATH_LENGTH = 1000;

type Segment = { literal: string } | { parameter: string };

/** Why a mapping path cannot be used, or undefined when it can. */
export function describeRouteProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "must start with /";
  if (path.length > MAX_PATH_LENGTH) return `must be at most ${MAX_PATH_LENGTH} characters`;
  if (path === "/") return undefined;
  const names = new Set<string>();
  for (const part of path.slice(1).split("/")) {
    if (part === "") return "must not end with / or hold an empty segment";
    if (part.startsWith(":")) {
      if (!PARAMETER.test(part)) {
        return `parameter ${part} must be : then a letter or _, then letters, digits or _ (at most 64)`;
      }
      if (names.has(part)) return `names the parameter ${part} twice`;
      names.add(part);
    } else if (part === "." || part === "..") {
      return "must not hold . or .. segments";
    } else if (!LITERAL.test(part)) {
      return `segment ${part} may hold only letters, digits, -, ., _ and ~ (or be a parameter :name)`;
    }
  }
  return undefined;
}

function segmentsOf(path: string): Segment[] {
  if (path === "/") return [];
  return path
    .slice(1)
    .split("/")
    .map((part) => (part.startsWith(":") ? { parameter: part.slice(1) } : { literal: part }));
}

/** The path with each parameter written as `:`: two mappings of a method with the same route would match the same requests. */
export function routeOf(path: string): string {
  if (path === "/") return "/";
  return path
    .split("/")
    .map((part) => (part.startsWith(":") ? ":" : part))
    .join("/");
}

export interface RoutedMapping<T> {
  mapping: T;
  /** Decoded values of the path's parameters. */
  params: Record<string, string>;
}

/** Mappings of one gateway, ready to match request paths. */
export interface RouteTable<T> {
  match(method: string, requestPath: string): RoutedMapping<T> | undefined;
}

/** Builds the table of a gateway's live mappings (`path` must pass `describeRouteProblem`). */
export function buildRouteTable<T extends { method: string; path: string }>(mappings: T[]): RouteTable<T> {
  const byMethod = new Map<string, { mapping: T; segments: Segment[]; rank: string }[]>();
  for (const mapping of mappings) {
    const segments = segmentsOf(mapping.path);
    // Literal segments sort before parameters, segment by segment.
    const rank = segments.map((segment) => ("literal" in segment ? "0" : "1")).join("");
    const routes = byMethod.get(mapping.method) ?? [];
    routes.push({ mapping, segments, rank });
    byMethod.set(mapping.method, routes);
  }
  for (const routes of byMethod.values()) routes.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));

  return {
    match(method, requestPath) {
      const routes = byMethod.get(method);
      if (!routes) return undefined;
      const parts = splitRequestPath(requestPath);
      if (!parts) return undefined;
      for (const route of routes) {
        const params = matchSegments(route.segments, parts);
        if (params) return { mapping: route.mapping, params };
      }
      return undefined;
    },
  };
}

/**
 * A request path's segments, decoded; one trailing slash is ignored (`/orders/` is
 * `/orders`). Undefined for a path no mapping can match (an empty segment, bad encoding).
 */
function splitRequestPath(requestPath: string): string[] | undefined {
  let path = requestPath || "/";
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  if (path === "/") return [];
  const parts: string[] = [];
  for (const raw of path.slice(1).split("/")) {
    if (raw === "") return undefined;
    try {
      parts.push(decodeURIComponent(raw));
    } catch {
      return undefined;
    }
  }
  return parts;
}

function matchSegments(segments: Segment[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: [string, string][] = [];
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index] as Segment;
    const part = parts[index] as string;
    if ("literal" in segment) {
      if (segment.literal !== part) return undefined;
    } else {
      params.push([segment.parameter, part]);
    }
  }
  // fromEntries, so a parameter named `__proto__` stays a plain field.
  return Object.fromEntries(params);
}

/** What the edge learns about a request before routing, shared with the routes it reaches. */
export interface RequestMeta {
  id: string;
  ip: string;
  /** The path as the client sent it, read once by the edge. */
  path: string;
  /** Holds the connection open while the request waits (see core's RequestInfo). */
  holdOpen(ms: number): void;
}

const metas = new WeakMap<Request, RequestMeta>();

export function attachRequestMeta(request: Request, meta: RequestMeta): void {
  metas.set(request, meta);
}

export function requestMeta(request: Request): RequestMeta {
  return (
    metas.get(request) ?? {
      id: crypto.randomUUID(),
      ip: "unknown",
      path: new URL(request.url).pathname,
      holdOpen: () => {},
    }
  );
}

import index from "../src/index.html";

/**
 * `bun run dev:web`: the console with hot reload on DEV_PORT (default 5173), its API calls
 * sent on to a running platform (API_URL, default http://localhost:3000: `bun run start`).
 * Sign in at http://localhost:5173/console/sign-in. The session cookie is set by the API
 * through this proxy, so it belongs to this origin as it would in production.
 */
const apiUrl = (process.env.API_URL ?? "http://localhost:3000").replace(/\/+$/, "");
const port = Number(process.env.DEV_PORT ?? 5173);

const server = Bun.serve({
  port,
  development: { hmr: true, console: true },
  routes: {
    "/console": index,
    "/console/sign-in": index,
    "/console/sign-up": index,
    "/console/password/forgot": index,
    "/console/flows": index,
    "/console/flows/*": index,
    "/console/runs": index,
    "/console/metrics": index,
    "/console/secrets": index,
    "/console/nodes": index,
    "/console/storage": index,
    "/console/gateways": index,
    "/console/registry": index,
    "/console/api-keys": index,
    "/console/members": index,
    "/console/security": index,
    "/console/runs/*": index,
    "/password/reset": index,
    "/invitations/accept": index,
  },
  // Everything else (tRPC, the session routes) is the platform's.
  fetch(request) {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.delete("host");
    return fetch(`${apiUrl}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual",
    });
  },
});
console.warn(`console dev server: ${server.url}console (API: ${apiUrl})`);

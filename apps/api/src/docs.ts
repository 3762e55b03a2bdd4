import { dirname, join } from "node:path";
import { FILE_CSP, PAGE_HEADERS, pageOrigin, pagePolicy } from "./page-policy.ts";

/** The API reference page: Swagger UI from the local swagger-ui-dist package, no CDN. */
const assetsDir = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));
const ASSETS = new Set([
  "swagger-ui.css",
  "swagger-ui-bundle.js",
  "swagger-ui-standalone-preset.js",
  "favicon-32x32.png",
]);

/** Where the page's files are served: the only scripts and stylesheets it loads. */
const DOCS_ASSETS_PATH = "/docs/";

/** The page's own script, a file of its own so that the page's policy admits no inline script. */
const START_SCRIPT_NAME = "start.js";
const START_SCRIPT = `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#api", deepLinking: true });\n`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Workflow Platform API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="api"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/${START_SCRIPT_NAME}"></script>
</body>
</html>`;

/**
 * The page's policy (see `pagePolicy`): scripts and stylesheets from `/docs/` only, images
 * from this origin and the `data:` icons of Swagger UI's stylesheet, requests ("Try it out",
 * `/openapi.json`) to this origin, no form posts anywhere. `apps/web/test/api-docs-page.test.ts`
 * renders it and tries an operation in a browser.
 */
const docsCsp = (origin: string | undefined) => pagePolicy(origin, DOCS_ASSETS_PATH, ["form-action 'none'"]);

/** `GET /docs`: the page, with the policy of the origin it was asked at. */
export function docsPage(request: Request): Response {
  return new Response(PAGE, {
    headers: {
      ...PAGE_HEADERS,
      "content-security-policy": docsCsp(pageOrigin(request)),
      "content-type": "text/html; charset=utf-8",
    },
  });
}

/** `GET /docs/<name>`: one of the page's files. */
export function docsAsset(name: string): Response {
  const headers = { ...PAGE_HEADERS, "content-security-policy": FILE_CSP };
  if (name === START_SCRIPT_NAME) {
    return new Response(START_SCRIPT, { headers: { ...headers, "content-type": "text/javascript;charset=utf-8" } });
  }
  if (!ASSETS.has(name)) return Response.json({ error: "not found" }, { status: 404 });
  return new Response(Bun.file(join(assetsDir, name)), { headers });
}

import { dirname, join } from "node:path";

/** The API reference page: Swagger UI from the local swagger-ui-dist package, no CDN. */
const assetsDir = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));
const ASSETS = new Set([
  "swagger-ui.css",
  "swagger-ui-bundle.js",
  "swagger-ui-standalone-preset.js",
  "favicon-32x32.png",
]);

export const docsPage = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Workflow Platform API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="api"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#api", deepLinking: true });</script>
</body>
</html>`;

export function docsAsset(name: string): Response {
  if (!ASSETS.has(name)) return Response.json({ error: "not found" }, { status: 404 });
  return new Response(Bun.file(join(assetsDir, name)));
}

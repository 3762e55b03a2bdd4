import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FILE_CSP, PAGE_HEADERS, pageOrigin, pagePolicy } from "../page-policy.ts";

/** Where `bun run build:web` writes the console; `CONSOLE_DIR` points elsewhere. */
export const DEFAULT_CONSOLE_DIR = join(import.meta.dir, "../../../web/dist");

/** Where the console's built files are served: the only scripts and stylesheets its pages load. */
export const CONSOLE_ASSETS_PATH = "/console/assets/";

/**
 * The console's document policy for a page loaded from `origin` (see `pagePolicy`): scripts
 * and stylesheets from the console's built files only; its fonts and manifest from the origin,
 * and its forms post there.
 */
export function consoleCsp(origin: string | undefined): string {
  return pagePolicy(origin, CONSOLE_ASSETS_PATH, ["font-src 'self'", "manifest-src 'self'", "form-action 'self'"]);
}

/** Built files are named by their content's hash: a name never changes meaning. */
const ASSET_NAME = /^[\w-]+\.(js|css|svg|png|woff2|map)$/;

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console is not built</h1><p>Run <code>bun run build:web</code> (the start scripts do), or point <code>CONSOLE_DIR</code> at a build.</p></body></html>`;

const ENCODINGS = [
  { encoding: "br", suffix: ".br" },
  { encoding: "gzip", suffix: ".gz" },
];

/** Whether `Accept-Encoding` names `encoding` (without refusing it with `q=0`). */
function accepts(header: string | null, encoding: string): boolean {
  return (header ?? "").split(",").some((part) => {
    const [name, ...params] = part.trim().split(";");
    return name?.trim() === encoding && !params.some((param) => /^\s*q=0(\.0*)?\s*$/.test(param));
  });
}

export interface ConsoleAssets {
  /** The document of every console page (the client routes), with the policy of the origin it was asked at. */
  page(request: Request): Response;
  /** A built file under `/console/assets/`, cached for good, compressed as the request accepts. */
  asset(name: string, acceptEncoding: string | null): Response;
}

/** Serves a console build from `dir`: its `index.html` and the names of its files read once, at start-up, like the build itself. */
export function consoleAssets(dir: string): ConsoleAssets {
  const indexPath = join(dir, "index.html");
  const html = existsSync(indexPath) ? readFileSync(indexPath, "utf8") : undefined;
  const assetsDir = join(dir, "assets");
  const built = new Set(existsSync(assetsDir) ? readdirSync(assetsDir) : []);
  return {
    page(request) {
      return new Response(html ?? NOT_BUILT, {
        status: html ? 200 : 503,
        headers: {
          ...PAGE_HEADERS,
          "content-security-policy": consoleCsp(pageOrigin(request)),
          "content-type": "text/html; charset=utf-8",
          "cache-control": "no-cache",
        },
      });
    },
    asset(name, acceptEncoding) {
      if (!ASSET_NAME.test(name) || !built.has(name)) return notFound();
      const path = join(assetsDir, name);
      const file = Bun.file(path);
      const headers: Record<string, string> = {
        ...PAGE_HEADERS,
        "content-security-policy": FILE_CSP,
        "cache-control": "public, max-age=31536000, immutable",
        "content-type": file.type,
        vary: "accept-encoding",
      };
      // The build wrote each asset's Brotli and gzip forms beside it.
      for (const { encoding, suffix } of ENCODINGS) {
        if (accepts(acceptEncoding, encoding) && built.has(`${name}${suffix}`)) {
          return new Response(Bun.file(`${path}${suffix}`), { headers: { ...headers, "content-encoding": encoding } });
        }
      }
      return new Response(file, { headers });
    },
  };
}

function notFound(): Response {
  return Response.json({ error: "not found" }, { status: 404, headers: { "x-content-type-options": "nosniff" } });
}

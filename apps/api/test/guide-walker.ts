/**
 * Reads the guide's `sh` blocks (docs/guide/*.md) as a user would type them, and runs them
 * in one shell against a real server, checking each command's answer against what the page
 * says it is. A block fenced ```` ```sh skip ```` is shown, not run (the page says why).
 *
 * A statement is a line, with the lines its `\` or an open quote carry on to. Its expected
 * answer is the comment that ends it (`curl … # {"message":"success"}`) or the comment lines
 * right after it; a comment counts when it starts with a status (`404 {…}`), `{` or `[`, and
 * anything after the JSON is prose. `…` in an expectation stands for anything. A `curl` with
 * no expectation must answer 2xx; every statement must exit 0.
 */

export interface Statement {
  page: string;
  /** Line of the statement's start in its page. */
  line: number;
  command: string;
  expected?: { status?: number; body?: string };
}

/** The quote state after a line: open single or double quote carries the statement on. */
function scan(text: string, state: { quote: "'" | '"' | null }): number | undefined {
  let commentAt: number | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (state.quote === "'") {
      if (c === "'") state.quote = null;
    } else if (state.quote === '"') {
      if (c === "\\") i++;
      else if (c === '"') state.quote = null;
    } else if (c === "\\") {
      i++;
    } else if (c === "'" || c === '"') {
      state.quote = c;
    } else if (c === "#" && (i === 0 || /\s/.test(text[i - 1] as string))) {
      commentAt = i;
      break;
    }
  }
  return commentAt;
}

/** The JSON-shaped start of a comment (up to its matching bracket), with a status before it. */
function expectationOf(comment: string): Statement["expected"] {
  const match = /^(?:(\d{3})\s+)?([[{])/.exec(comment);
  if (!match) return undefined;
  const start = match.index + match[0].length - 1;
  let depth = 0;
  let inString = false;
  for (let i = start; i < comment.length; i++) {
    const c = comment[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) {
        return { status: match[1] ? Number(match[1]) : undefined, body: comment.slice(start, i + 1) };
      }
    }
  }
  return { status: match[1] ? Number(match[1]) : undefined, body: comment.slice(start) };
}

/** The statements of a page's walked blocks, in order. */
export function statementsOf(page: string, markdown: string): Statement[] {
  const lines = markdown.split("\n");
  const statements: Statement[] = [];
  let inBlock = false;
  let walked = false;
  let current: { line: number; parts: string[]; comment: string[] } | undefined;
  let last: Statement | undefined;
  /** The comment text of the last statement, its own and the comment lines after it. */
  let lastComment = "";
  const state = { quote: null as "'" | '"' | null };

  const finish = () => {
    if (!current) return;
    lastComment = current.comment.join(" ").trim();
    last = { page, line: current.line, command: current.parts.join("\n"), expected: expectationOf(lastComment) };
    statements.push(last);
    current = undefined;
  };

  for (const [index, line] of lines.entries()) {
    if (!inBlock) {
      const fence = /^```(\S*)\s*(\S*)/.exec(line);
      if (fence && fence[1] !== "") {
        inBlock = true;
        walked = fence[1] === "sh" && fence[2] !== "skip";
        last = undefined;
      }
      continue;
    }
    if (line.startsWith("```")) {
      finish();
      inBlock = false;
      continue;
    }
    if (!walked) continue;
    if (!current) {
      if (/^\s*#/.test(line)) {
        // Comment lines after a statement carry its expected answer on (prose after the JSON is left out).
        if (last) {
          lastComment = `${lastComment} ${line.replace(/^\s*#\s?/, "")}`.trim();
          last.expected = expectationOf(lastComment);
        }
        continue;
      }
      if (line.trim() === "") continue;
      current = { line: index + 1, parts: [], comment: [] };
    }
    const commentAt = scan(line, state);
    current.parts.push(commentAt === undefined ? line : line.slice(0, commentAt).trimEnd());
    if (commentAt !== undefined) current.comment.push(line.slice(commentAt + 1));
    const continues = state.quote !== null || (commentAt === undefined && line.endsWith("\\"));
    if (!continues) finish();
  }
  return statements;
}

/** Whether an answer body matches an expectation, `…` standing for anything; whitespace is ignored. */
export function matchesExpected(expected: string, actual: string): boolean {
  const squeeze = (text: string) => text.replace(/\s+/g, "");
  const pattern = squeeze(expected)
    .split("…")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*?");
  return new RegExp(`^${pattern}$`).test(squeeze(actual));
}

import { describe, expect, test } from "bun:test";
import { MAX_ERROR_TEXT, recordableErrorText } from "./error-text.ts";

describe("the error text a run records", () => {
  const secrets = { token: "sk_live_a/b+c d", short: "tk" };

  test("every spelling of a resolved secret becomes [secret:<key>]: as is, in a URL, in a form, in JSON", () => {
    const text = [
      "GET https://api.example/v1/sk_live_a%2Fb%2Bc%20d?key=sk_live_a%2Fb%2Bc%20d failed",
      "body: token=sk_live_a%2Fb%2Bc+d",
      'echo: {"auth":"Bearer sk_live_a/b+c d"}',
      'json: "sk_live_a\\/b+c d"',
    ].join("; ");
    const recorded = recordableErrorText(text, secrets);
    expect(recorded).not.toContain("sk_live");
    expect(recorded).toBe(
      "GET https://api.example/v1/[secret:token]?key=[secret:token] failed; body: token=[secret:token]; " +
        'echo: {"auth":"Bearer [secret:token]"}; json: "[secret:token]"',
    );
  });

  test("a failure with no secrets keeps its words; NUL and lone surrogates become U+FFFD; long text is cut", () => {
    expect(recordableErrorText("upstream said 503")).toBe("upstream said 503");
    expect(recordableErrorText("a\u0000b\ud800c")).toBe("a\uFFFDb\uFFFDc");
    const long = recordableErrorText("x".repeat(MAX_ERROR_TEXT + 50));
    expect(long).toHaveLength(MAX_ERROR_TEXT + 1);
    expect(long.endsWith("…")).toBe(true);
  });
});

import { describe, expect, test } from "bun:test";
import { addStepSearch, argumentsSkeleton, mcpCallStep, readAddedStep, withStepAdded } from "./mcp-step.ts";

const add = {
  name: "add",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" }, "note-text": { type: "string" }, hint: {} },
    required: ["a", "b", "note-text"],
  },
};

describe("use in a flow: the mcp.call step of a registry server's tool", () => {
  test("the required arguments are read from the trigger's fields of the same name; optional ones are left out", () => {
    expect(argumentsSkeleton(add.inputSchema)).toEqual({
      a: "{{trigger.a}}",
      b: "{{trigger.b}}",
      "note-text": "{{trigger.`note-text`}}",
    });
    expect(argumentsSkeleton({ type: "object" })).toEqual({});
  });

  test("the step calls the tool of the registry server, with the credential header when one was given", () => {
    expect(mcpCallStep("io.example/calc", add)).toEqual({
      name: "add",
      subject: "mcp.call",
      payload: {
        server: { registry: "io.example/calc" },
        tool: "add",
        arguments: { a: "{{trigger.a}}", b: "{{trigger.b}}", "note-text": "{{trigger.`note-text`}}" },
      },
    });
    const headers = { authorization: "Bearer {{secrets.calc}}" };
    expect(mcpCallStep("io.example/calc", add, headers).payload.headers).toEqual(headers);
    // A tool name that is no step name is made one.
    expect(mcpCallStep("s", { name: "get weather.now", inputSchema: {} }).name).toBe("get_weather_now");
  });

  test("appended to a flow's steps under a name none of them has; a new flow's example steps are replaced", () => {
    const step = mcpCallStep("io.example/calc", add);
    const existing = JSON.stringify([{ name: "add", subject: "transform", payload: {} }]);
    const added = withStepAdded(existing, step);
    expect(added?.added.name).toBe("add_2");
    expect(JSON.parse(added?.text ?? "")).toEqual([
      { name: "add", subject: "transform", payload: {} },
      { ...step, name: "add_2" },
    ]);
    expect(JSON.parse(withStepAdded(existing, step, true)?.text ?? "")).toEqual([step]);
    // Steps that are not JSON yet are left alone.
    expect(withStepAdded("[{", step)).toBeUndefined();
  });

  test("the editor's route carries the step as text; anything else is no step", () => {
    const step = mcpCallStep("io.example/calc", add);
    expect(readAddedStep(addStepSearch({ add_step: JSON.stringify(step) }).add_step)).toEqual(step);
    expect(addStepSearch({ add_step: 3 })).toEqual({});
    expect(readAddedStep("not json")).toBeUndefined();
    expect(readAddedStep(JSON.stringify({ name: "x", subject: "http.request" }))).toBeUndefined();
  });
});

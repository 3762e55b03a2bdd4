import { describe, expect, test } from "bun:test";
import { toolFormOf, toolNameOf, toolOf } from "./flow-tool.ts";

describe("the flow page's MCP tool switch", () => {
  test("a flow that is no tool yet starts from its name and description, switched off", () => {
    const form = toolFormOf({ name: "Refund an order!", description: "", mcp: null });
    expect(form).toMatchObject({ offered: false, tool: "refund_an_order", description: "Refund an order!" });
    expect(toolOf(form)).toEqual({ mcp: null });
    expect(toolNameOf("***")).toBe("flow_tool");
  });

  test("switched on, it saves the tool with its schemas; an empty output schema is none", () => {
    const form = { ...toolFormOf({ name: "refund", description: "Refunds", mcp: null }), offered: true };
    expect(toolOf(form)).toEqual({
      mcp: {
        tool: "refund",
        description: "Refunds",
        input_schema: { type: "object", properties: {} },
        output_schema: null,
      },
    });
    expect(toolOf({ ...form, inputSchemaText: "{" })).toMatchObject({ field: "mcp.input_schema" });
    expect(toolOf({ ...form, outputSchemaText: "{x" })).toMatchObject({ field: "mcp.output_schema" });
  });

  test("a saved tool is shown as saved", () => {
    const mcp = {
      tool: "refund_order",
      description: "Refunds an order",
      input_schema: { type: "object", required: ["id"] },
      output_schema: { type: "object" },
    };
    const form = toolFormOf({ name: "x", description: "", mcp });
    expect(form.offered).toBe(true);
    expect(toolOf(form)).toEqual({ mcp });
  });
});

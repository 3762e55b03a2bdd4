/**
 * The flow page's switch that offers a flow as a tool of the account's MCP endpoint (its
 * `mcp` field): the form it shows, what it starts from, and the `mcp` it saves.
 */
import type { RouterOutputs } from "@platform/client";
import { parseJson } from "../ui/json-field.ts";

type SavedTool = NonNullable<RouterOutputs["flows"]["get"]["data"]["mcp"]>;

export interface ToolForm {
  offered: boolean;
  tool: string;
  description: string;
  /** The schemas as the person types them: JSON text (the output schema may be empty). */
  inputSchemaText: string;
  outputSchemaText: string;
}

/** A tool name MCP accepts, made of a flow's name: `Refund an order` → `refund_an_order`. */
export function toolNameOf(flowName: string): string {
  const name = flowName
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64);
  return name || "flow_tool";
}

const EMPTY_SCHEMA = { type: "object", properties: {} };

/** The form of a flow's tool as saved, or, for a flow that is none yet, one made of its name and description. */
export function toolFormOf(flow: { name: string; description: string; mcp: SavedTool | null }): ToolForm {
  if (flow.mcp) {
    return {
      offered: true,
      tool: flow.mcp.tool,
      description: flow.mcp.description,
      inputSchemaText: JSON.stringify(flow.mcp.input_schema, null, 2),
      outputSchemaText: flow.mcp.output_schema ? JSON.stringify(flow.mcp.output_schema, null, 2) : "",
    };
  }
  return {
    offered: false,
    tool: toolNameOf(flow.name),
    description: flow.description || flow.name,
    inputSchemaText: JSON.stringify(EMPTY_SCHEMA, null, 2),
    outputSchemaText: "",
  };
}

/** The `mcp` field the form saves (null: not a tool), or which schema is not JSON yet. */
export function toolOf(form: ToolForm): { mcp: SavedTool | null } | { field: string; error: string } {
  if (!form.offered) return { mcp: null };
  const input = parseJson(form.inputSchemaText);
  if (!("value" in input)) return { field: "mcp.input_schema", error: `Not JSON yet: ${input.error}` };
  let output: unknown = null;
  if (form.outputSchemaText.trim()) {
    const parsed = parseJson(form.outputSchemaText);
    if (!("value" in parsed)) return { field: "mcp.output_schema", error: `Not JSON yet: ${parsed.error}` };
    output = parsed.value;
  }
  // The API checks the schemas (and says which field is wrong): the console only reads the JSON.
  return {
    mcp: {
      tool: form.tool,
      description: form.description,
      input_schema: input.value as SavedTool["input_schema"],
      output_schema: output as SavedTool["output_schema"],
    },
  };
}

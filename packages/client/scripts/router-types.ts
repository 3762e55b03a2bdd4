import ts from "typescript";

/**
 * Writes the router's type as a standalone declaration: every procedure with its input and
 * output spelled out, so the package's types need nothing but @trpc/server (which
 * @trpc/client needs anyway), none of the server's code or dependencies.
 */

const FLAGS =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.InTypeAlias |
  ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType;

/** Words a printed type may use without declaring anything. */
const BUILT_IN = new Set([
  "string",
  "number",
  "boolean",
  "bigint",
  "null",
  "undefined",
  "unknown",
  "never",
  "void",
  "object",
  "true",
  "false",
  "readonly",
  "Record",
]);

/** Whether a printed type names nothing beyond TypeScript's own types. */
function selfContained(text: string): boolean {
  const withoutLiterals = text.replace(/'(?:[^'\\]|\\.)*'/g, "''");
  const withoutKeys = withoutLiterals.replace(/[A-Za-z_$][\w$]*\??:/g, "");
  return (withoutKeys.match(/[A-Za-z_$][\w$]*/g) ?? []).every((word) => BUILT_IN.has(word));
}

function printer(checker: ts.TypeChecker) {
  const print = (type: ts.Type): string => {
    const text = checker.typeToString(type, undefined, FLAGS);
    if (selfContained(text)) return text;
    // A named type (an alias of the server's): spell it out.
    if (type.isUnion()) return type.types.map(print).join(" | ");
    if (type.isIntersection()) return type.types.map((part) => `(${print(part)})`).join(" & ");
    if (checker.isArrayType(type))
      return `(${print(checker.getTypeArguments(type as ts.TypeReference)[0] as ts.Type)})[]`;
    if (type.flags & ts.TypeFlags.Object) {
      const members = checker.getPropertiesOfType(type).map((property) => {
        const optional = property.flags & ts.SymbolFlags.Optional ? "?" : "";
        return `${JSON.stringify(property.name)}${optional}: ${print(checker.getTypeOfSymbol(property))};`;
      });
      for (const index of checker.getIndexInfosOfType(type)) {
        members.push(`[key: ${checker.typeToString(index.keyType)}]: ${print(index.type)};`);
      }
      return `{ ${members.join(" ")} }`;
    }
    throw new Error(`cannot spell out the type ${text}`);
  };
  return print;
}

const propertyType = (checker: ts.TypeChecker, type: ts.Type, name: string): ts.Type | undefined => {
  const symbol = type.getProperty(name);
  return symbol ? checker.getTypeOfSymbol(symbol) : undefined;
};

/** The declaration of `AppRouter`, from the type exported under that name by `file`. */
export function standaloneRouterDeclaration(program: ts.Program, file: string): string {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const module = source && checker.getSymbolAtLocation(source);
  const exported = module && checker.getExportsOfModule(module).find((symbol) => symbol.name === "AppRouter");
  if (!exported) throw new Error(`${file} exports no AppRouter`);
  const router = checker.getDeclaredTypeOfSymbol(exported);
  const print = printer(checker);
  const get = (type: ts.Type | undefined, ...path: string[]): ts.Type => {
    let current = type;
    for (const name of path) current = current && propertyType(checker, current, name);
    if (!current) throw new Error(`the router type has no ${path.join(".")}`);
    return current;
  };

  const errorShape = print(get(router, "_def", "_config", "$types", "errorShape"));
  /** A router's procedures and sub-routers (its `_def.record`), or a plain nested record's. */
  const record = (entries: ts.Type, indent: string): string => {
    const lines = checker.getPropertiesOfType(entries).map((entry) => {
      const value = checker.getTypeOfSymbol(entry);
      const key = JSON.stringify(entry.name);
      const def = propertyType(checker, value, "_def");
      if (!def) return `${indent}${key}: ${record(value, `${indent}  `)};`;
      if (def.getProperty("router")) return `${indent}${key}: ${record(get(def, "record"), `${indent}  `)};`;
      const kind = checker.typeToString(get(def, "type"));
      const name = { '"query"': "TRPCQueryProcedure", '"mutation"': "TRPCMutationProcedure" }[kind];
      if (!name) throw new Error(`procedure ${entry.name} is a ${kind}, which the client does not support`);
      const input = print(get(def, "$types", "input"));
      const output = print(get(def, "$types", "output"));
      return `${indent}${key}: ${name}<{ input: ${input}; output: ${output}; meta: object; errorShape: ErrorShape }>;`;
    });
    return `{\n${lines.join("\n")}\n${indent.slice(2)}}`;
  };

  return [
    "// Generated from the server's router by packages/client/scripts/build.ts. Do not edit.",
    'import type { TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure } from "@trpc/server";',
    "",
    "/** The body of an error the server answers, as tRPC carries it. */",
    `export type ErrorShape = ${errorShape};`,
    "",
    "/** The platform's API: one router per area, each procedure with its input and output. */",
    "export type AppRouter = TRPCBuiltRouter<",
    "  { ctx: object; meta: object; errorShape: ErrorShape; transformer: false },",
    `  ${record(get(router, "_def", "record"), "    ")}`,
    ">;",
    "",
  ].join("\n");
}

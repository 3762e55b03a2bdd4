/**
 * Owns one thread's QuickJS WebAssembly module. The module is compiled once per thread and
 * instantiated on a WebAssembly.Memory whose maximum is the evaluation's memory limit plus what
 * QuickJS itself needs, which makes the limit real: QuickJS's own accounting cannot see
 * allocation sizes under Emscripten, so without the cap a memory bomb would grow the module to
 * its 2 GB ceiling. Evaluations run one at a time, each in a fresh runtime; after one that
 * left the memory grown (a bomb, a large input) or broke the module, a fresh instance takes
 * over and the old memory is given back.
 */
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";
import { BrokenModule, type EvaluationLimits, evaluate, type Outcome } from "./evaluate.ts";

const PAGE = 65_536;
/** The module's own needs: its 5 MB stack, static data and a fresh context (its initial memory). */
const BASE_BYTES = 16 * 1024 * 1024;
/** The memory counts as spent when less than this is left to grow. */
const HEADROOM_BYTES = 4 * 1024 * 1024;

let compiled: Promise<WebAssembly.Module> | undefined;

function compile(): Promise<WebAssembly.Module> {
  compiled ??= Bun.file(new URL(import.meta.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")))
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes));
  return compiled;
}

interface Instance {
  quickjs: QuickJSWASMModule;
  memory: WebAssembly.Memory;
  maxBytes: number;
}

async function instantiate(memoryBytes: number): Promise<Instance> {
  const maxBytes = BASE_BYTES + Math.ceil(memoryBytes / PAGE) * PAGE;
  const memory = new WebAssembly.Memory({ initial: BASE_BYTES / PAGE, maximum: maxBytes / PAGE });
  const quickjs = await newQuickJSWASMModuleFromVariant(
    newVariant(variant, { wasmModule: await compile(), wasmMemory: memory }),
  );
  return { quickjs, memory, maxBytes };
}

export class QuickJsHost {
  private instance?: Promise<Instance>;
  private memoryBytes = 0;
  /** Instances loaded so far: a second one means a run grew or broke the first. */
  loads = 0;

  /** Loads the module ahead of the first evaluation. */
  warm(memoryBytes: number): Promise<unknown> {
    return this.instanceFor(memoryBytes);
  }

  async evaluate(code: string, input: string, limits: EvaluationLimits): Promise<Outcome> {
    const { quickjs, memory, maxBytes } = await this.instanceFor(limits.memoryBytes);
    const outOfMemory = () => memory.buffer.byteLength + HEADROOM_BYTES >= maxBytes;
    try {
      const outcome = evaluate(quickjs, code, input, limits, outOfMemory);
      if (memory.buffer.byteLength > BASE_BYTES + limits.memoryBytes / 2) this.instance = undefined;
      return outcome;
    } catch (error) {
      this.instance = undefined;
      if (error instanceof BrokenModule) return error.outcome;
      throw error;
    }
  }

  private instanceFor(memoryBytes: number): Promise<Instance> {
    if (!this.instance || memoryBytes !== this.memoryBytes) {
      this.memoryBytes = memoryBytes;
      this.loads++;
      const loading = instantiate(memoryBytes);
      // a failed load is retried by the next evaluation
      loading.catch(() => {
        if (this.instance === loading) this.instance = undefined;
      });
      this.instance = loading;
    }
    return this.instance;
  }
}

// Shared pieces of the server's Node tests: where the built programs are,
// the client libraries installed in the build folder, a synthetic pack, and
// a `strata-run --serve` child process on a loopback port it picks itself.
//
// Environment (set by CTest, see tests/CMakeLists.txt):
//   STRATA_BINARY_DIR  the build folder
//   STRATA_NODE_DIR    where run_node_test.sh installed package.json's dependencies

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this test through ctest (or tests/serve/run_node_test.sh)`);
  return v;
}

export const BIN = required("STRATA_BINARY_DIR");
export const NODE_DIR = required("STRATA_NODE_DIR");
// `require` that resolves from the installed node_modules, not from this source folder.
export const requireDep = createRequire(path.join(NODE_DIR, "package.json"));

// A file of ../shared/data (or $STRATA_DATA_DIR), or null when it is missing
// and STRATA_ALLOW_MISSING_DATA=1 (the caller skips, and says why); missing
// otherwise is an error, as in the C++ tests.
export function sharedFile(relative) {
  const dir = process.env.STRATA_DATA_DIR || path.join(BIN, "..", "..", "shared", "data");
  const file = path.join(dir, relative);
  if (fs.existsSync(file)) return file;
  if (process.env.STRATA_ALLOW_MISSING_DATA === "1") return null;
  throw new Error(`shared data file missing: ${file} (set STRATA_DATA_DIR to ../shared/data)`);
}

export function program(name) {
  const where = { "strata-run": "runtime", "strata-pack": "packer", "strata-make-gguf": "tests" }[name];
  return path.join(BIN, where, name);
}

// A fresh scratch folder under the build folder.
export function scratch(name) {
  const dir = path.join(BIN, "test-scratch", `node-${name}-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: "buffer", maxBuffer: 64 << 20, ...options });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString("utf8") };
}

// A tiny synthetic model (built-in byte-level tokenizer with ChatML tokens), packed.
export function makePack(dir, { arch = "qwen35moe", seed = 3, name = "tiny", context = 0 } = {}) {
  const gguf = path.join(dir, `${name}.gguf`), pack = path.join(dir, `${name}.strata`);
  const extra = context ? ["--context-length", String(context)] : [];
  let r = run(program("strata-make-gguf"), ["--arch", arch, "--seed", String(seed), ...extra, "-o", gguf]);
  if (r.code !== 0) throw new Error(`strata-make-gguf failed: ${r.stderr}`);
  r = run(program("strata-pack"), [gguf, "-o", pack, "--no-probe"]);
  if (r.code !== 0) throw new Error(`strata-pack failed: ${r.stderr}`);
  return pack;
}

// Packs a GGUF as it is.
export function packGguf(gguf, dir, name) {
  const pack = path.join(dir, `${name}.strata`);
  const r = run(program("strata-pack"), [gguf, "-o", pack, "--no-probe"]);
  if (r.code !== 0) throw new Error(`strata-pack failed: ${r.stderr}`);
  return pack;
}

// Starts `strata-run PACK --serve --port 0 --reference ARGS` and waits until
// /health answers 200. The reference backend keeps its numbers equal to the
// CLI's `--reference` runs whatever backends the build has.
export async function startServer(pack, args = [], env = {}) {
  const proc = spawn(program("strata-run"), [pack, "--serve", "--port", "0", "--reference", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  proc.stderr.on("data", (d) => { log += d.toString("utf8"); });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve(code ?? 128 + (signal ? 1 : 0))));
  let exitCode = null;
  exited.then((c) => { exitCode = c; });
  const deadline = Date.now() + 60000;
  let port = null;
  while (!port) {
    const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) port = Number(m[1]);
    else if (exitCode !== null) throw new Error(`strata-run exited with ${exitCode}:\n${log}`);
    else if (Date.now() > deadline) throw new Error(`strata-run did not listen in time:\n${log}`);
    else await sleep(20);
  }
  const url = `http://127.0.0.1:${port}`;
  while (true) {
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) break;
    } catch (e) { /* not yet */ }
    if (Date.now() > deadline) throw new Error(`strata-run did not become ready:\n${log}`);
    await sleep(20);
  }
  return {
    port, url, proc,
    log: () => log,
    // Sends SIGTERM and resolves to the exit code.
    async stop(signal = "SIGTERM") {
      if (exitCode === null) proc.kill(signal);
      return exited;
    },
  };
}

export function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

// The server's Prometheus metrics as {name: value} (without the "strata:" prefix).
export async function metrics(url, headers = {}) {
  const text = await (await fetch(`${url}/metrics`, { headers })).text();
  const out = {};
  for (const line of text.split("\n")) {
    const m = line.match(/^strata:(\w+) (\S+)$/);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

// A soak of the server on loopback, run by hand (not registered with CTest):
//   STRATA_SOAK_MINUTES=60 STRATA_BINARY_DIR=build bash tests/serve/run_node_test.sh soak.test.mjs
// For STRATA_SOAK_MINUTES (default 10) it keeps WORKERS loops busy, each
// drawing in turn, until the deadline (every loop is bounded by it):
//   - a streamed chat and a chat at once (conversations of a few turns);
//   - a required tool call (the generic format: stories260K has no template)
//     and a json_schema answer;
//   - a stream the client cancels after its first chunk;
//   - a client that disconnects mid-answer (a raw socket closed early);
//   - a hostile connection: a head trickled byte by byte, or bytes that are
//     not HTTP.
// Every minute it records the server's RSS (/proc/PID/status), its open
// connections (/metrics), that minute's latency percentiles (whole answers
// and first tokens), and errors. It fails when a 5xx is not one the test
// caused, or when RSS grows more than 5% from the end of the warm-up (the
// first 10 minutes, or the first fifth of a shorter run) to the end.
// bench/results/server.md records runs; STRATA_SOAK_OUT also writes the
// per-minute rows as JSON.

import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import { test } from "node:test";

import { makePack, metrics, packGguf, percentile, requireDep, scratch, sharedFile, sleep, startServer }
  from "./lib/harness.mjs";

const { OpenAI } = requireDep("openai");
const MINUTES = Number(process.env.STRATA_SOAK_MINUTES || 10);
const WORKERS = Number(process.env.STRATA_SOAK_WORKERS || 8);
const SLOTS = Number(process.env.STRATA_SOAK_SLOTS || 4);
const KINDS = ["stream", "chat", "tools", "schema", "cancel", "disconnect", "hostile"];

const weatherTool = {
  type: "function",
  function: { name: "get_weather", description: "Current weather",
              parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } },
                            required: ["city"] } },
};
const personSchema = { type: "json_schema", json_schema: { name: "person", schema: {
  type: "object", properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer", minimum: 0,
  maximum: 120 } }, required: ["name", "age"] } } };

function rssKiB(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) : NaN;
}

// A raw request that the client abandons after `bytes` of the answer.
function disconnectAfter(port, body, bytes) {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
              `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    let got = 0;
    s.on("data", (d) => { got += d.length; if (got >= bytes) s.destroy(); });
    s.on("close", () => resolve(got));
    s.on("error", () => resolve(got));
    s.setTimeout(30000, () => s.destroy());
  });
}

// A hostile client: a head trickled a byte at a time for a while, or junk.
function hostile(port, junk) {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    const head = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: ${"a".repeat(40)}\r\n`;
    let i = 0;
    const timer = setInterval(() => {
      if (s.destroyed) return clearInterval(timer);
      if (junk) { s.write(Buffer.from([0, 255, 13, 10, 1, 2, 3])); return; }
      if (i < head.length) s.write(head[i++]);
      else { clearInterval(timer); s.destroy(); }
    }, 50);
    s.on("error", () => {});
    s.on("close", () => { clearInterval(timer); resolve(); });
    setTimeout(() => s.destroy(), 3000);
  });
}

test(`soak: ${MINUTES} min, ${WORKERS} workers, --parallel ${SLOTS}`, { timeout: (MINUTES + 5) * 60 * 1000 }, async (t) => {
  let pack, name;
  const gguf = sharedFile("models/stories260K.gguf");
  if (gguf) {
    pack = packGguf(gguf, scratch("soak"), "stories");
    name = "stories";
  } else {
    pack = makePack(scratch("soak"), { name: "tiny2k", context: 2048 });
    name = "tiny2k";
  }
  const server = await startServer(pack, ["--parallel", String(SLOTS), "--queue", String(WORKERS * 2), "-c", "2048"]);
  const deadline = Date.now() + MINUTES * 60000;
  const rows = [];
  let minute = { latencies: [], firsts: [], done: 0, errors: [], kinds: {} };
  const unexpected = [];
  const c = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 120000 });
  const worker = async (id) => {
    const messages = [];
    for (let i = 0; Date.now() < deadline; ++i) {
      const kind = KINDS[(id + i) % KINDS.length];
      const start = performance.now();
      try {
        if (kind === "stream" || kind === "chat") {
          if (messages.length > 6) messages.length = 0;
          messages.push({ role: "user", content: `Tell me a story about ${["a cat", "the sea", "bread"][i % 3]}.` });
          let answer = "";
          if (kind === "stream") {
            const stream = await c.chat.completions.create({ model: name, messages, max_tokens: 24, stream: true,
                                                             seed: id * 100000 + i });
            let first = 0;
            for await (const chunk of stream) {
              const piece = chunk.choices[0]?.delta?.content;
              if (piece) { if (!first) first = performance.now(); answer += piece; }
            }
            if (first) minute.firsts.push(first - start);
          } else {
            const r = await c.chat.completions.create({ model: name, messages, max_tokens: 24, seed: id * 100000 + i });
            answer = r.choices[0].message.content ?? "";
          }
          messages.push({ role: "assistant", content: answer });
        } else if (kind === "tools") {
          await c.chat.completions.create({ model: name, messages: [{ role: "user", content: "Weather in Oslo?" }],
                                            tools: [weatherTool], tool_choice: "required", parallel_tool_calls: false,
                                            max_tokens: 80, seed: i });
        } else if (kind === "schema") {
          await c.chat.completions.create({ model: name, messages: [{ role: "user", content: "A person, please." }],
                                            response_format: personSchema, max_tokens: 60, seed: i });
        } else if (kind === "cancel") {
          const ac = new AbortController();
          const stream = await c.chat.completions.create({ model: name, max_tokens: 200, stream: true, ignore_eos: true,
            messages: [{ role: "user", content: "Go on and on." }] }, { signal: ac.signal });
          try {
            for await (const chunk of stream) { if (chunk.choices[0]?.delta?.content) { ac.abort(); break; } }
          } catch (e) { if (e.name !== "AbortError" && !String(e).includes("abort")) throw e; }
        } else if (kind === "disconnect") {
          await disconnectAfter(server.port, JSON.stringify({ model: name, stream: true, max_tokens: 200,
            ignore_eos: true, messages: [{ role: "user", content: "Talk." }] }), 300);
        } else {
          await hostile(server.port, i % 2 === 0);
        }
        minute.done++;
        minute.kinds[kind] = (minute.kinds[kind] ?? 0) + 1;
        if (kind !== "cancel" && kind !== "disconnect" && kind !== "hostile") minute.latencies.push(performance.now() - start);
      } catch (e) {
        const status = e.status ?? 0;
        minute.errors.push(`${kind}: ${status} ${String(e.message).slice(0, 120)}`);
        if (status >= 500 || status === 0) unexpected.push(`${kind}: ${status} ${String(e.message).slice(0, 200)}`);
      }
    }
  };
  const sampler = async () => {
    const t0 = Date.now();
    for (let m = 1; Date.now() < deadline; ++m) {
      await sleep(Math.max(0, t0 + m * 60000 - Date.now()));
      const met = await metrics(server.url);
      const lat = [...minute.latencies].sort((a, b) => a - b), first = [...minute.firsts].sort((a, b) => a - b);
      const row = { minute: m, rss_mib: +(rssKiB(server.proc.pid) / 1024).toFixed(1),
                    connections: met.http_connections_open, done: minute.done, errors: minute.errors.length,
                    p50_ms: Math.round(percentile(lat, 50)), p99_ms: Math.round(percentile(lat, 99)),
                    first_p50_ms: Math.round(percentile(first, 50)), first_p99_ms: Math.round(percentile(first, 99)),
                    kinds: minute.kinds };
      rows.push(row);
      console.log(JSON.stringify(row));
      for (const e of minute.errors.slice(0, 3)) console.log(`  error: ${e}`);
      minute = { latencies: [], firsts: [], done: 0, errors: [], kinds: {} };
    }
  };
  await Promise.all([sampler(), ...Array.from({ length: WORKERS }, (_, i) => worker(i))]);
  const final = await metrics(server.url);
  assert.equal(await server.stop(), 0, server.log().slice(-2000));
  if (process.env.STRATA_SOAK_OUT) fs.writeFileSync(process.env.STRATA_SOAK_OUT, JSON.stringify({ rows, final }, null, 1));
  console.log("| minute | RSS MiB | connections | requests | errors | p50 ms | p99 ms | first token p50 | first token p99 |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of rows)
    console.log(`| ${r.minute} | ${r.rss_mib} | ${r.connections} | ${r.done} | ${r.errors} | ${r.p50_ms} | ${r.p99_ms} | ` +
                `${r.first_p50_ms} | ${r.first_p99_ms} |`);
  assert.deepEqual(unexpected, [], "5xx or transport errors the test did not cause");
  const warm = Math.max(1, Math.min(10, Math.floor(rows.length / 5)));
  assert.ok(rows.length > warm, "the run is too short to compare RSS after the warm-up");
  const base = rows[warm - 1].rss_mib, end = rows[rows.length - 1].rss_mib;
  console.log(`RSS after warm-up (minute ${warm}) ${base} MiB, at the end ${end} MiB (${((end / base - 1) * 100).toFixed(1)}%)`);
  assert.ok(end <= base * 1.05, `RSS grew from ${base} MiB to ${end} MiB after the warm-up`);
});

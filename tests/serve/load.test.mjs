// A bounded load test on loopback: CLIENTS concurrent `openai` clients send
// REQUESTS chat requests each (streamed and not, alternately) to a server
// with --parallel SLOTS. Passes when every request succeeds and the server's
// counters agree; reports p50/p99 latency, time to first token and aggregate
// generated tokens/s (bench/results/server.md records a run).
//
//   STRATA_LOAD_CLIENTS (8), STRATA_LOAD_REQUESTS (50), STRATA_LOAD_SLOTS (4),
//   STRATA_LOAD_MAX_TOKENS (16), STRATA_LOAD_MODEL (stories: the trained
//   stories260K of ../shared/data, or synthetic: the tiny qwen35moe pack)
//   STRATA_LOAD_OUT: also write the summary as JSON to this file.

import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";

import { makePack, metrics, packGguf, percentile, requireDep, scratch, sharedFile, startServer }
  from "./lib/harness.mjs";

const { OpenAI } = requireDep("openai");
const env = (name, fallback) => Number(process.env[name] || fallback);
const CLIENTS = env("STRATA_LOAD_CLIENTS", 8);
const REQUESTS = env("STRATA_LOAD_REQUESTS", 50);
const SLOTS = env("STRATA_LOAD_SLOTS", 4);
const MAX_TOKENS = env("STRATA_LOAD_MAX_TOKENS", 16);
const MODEL = process.env.STRATA_LOAD_MODEL || "stories";

const TOPICS = ["the sea", "a small dog", "rain", "a red ball", "the moon", "bread", "a long road", "friends"];

test(`load: ${CLIENTS} clients x ${REQUESTS} requests, --parallel ${SLOTS}`, { timeout: 15 * 60 * 1000 }, async (t) => {
  let pack;
  if (MODEL === "stories") {
    const gguf = sharedFile("models/stories260K.gguf");
    if (!gguf) return t.skip("shared data missing (STRATA_ALLOW_MISSING_DATA=1): models/stories260K.gguf");
    pack = packGguf(gguf, scratch("load"), "stories");
  } else {
    pack = makePack(scratch("load"));
  }
  const server = await startServer(pack, ["--parallel", String(SLOTS), "--queue", String(CLIENTS)]);
  const latencies = [], firstTokens = [];
  let tokens = 0, errors = 0, cached = 0;
  const errorMessages = [];
  const t0 = performance.now();
  try {
    const client = async (id) => {
      const c = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 120000 });
      const messages = [];
      for (let i = 0; i < REQUESTS; ++i) {
        // Each client holds a conversation of a few turns, then starts over:
        // follow-ups exercise prefix reuse while other clients take slots.
        if (i % 3 === 0) messages.length = 0;
        messages.push({ role: "user", content: `Tell me about ${TOPICS[(id + i) % TOPICS.length]}.` });
        const start = performance.now();
        try {
          let answer = "";
          if (i % 2 === 0) {
            const stream = await c.chat.completions.create({
              model: "m", messages, max_tokens: MAX_TOKENS, temperature: 0.7, seed: id * 1000 + i, stream: true,
              stream_options: { include_usage: true } });
            let first = 0;
            for await (const chunk of stream) {
              const piece = chunk.choices.length ? chunk.choices[0].delta.content : null;
              if (piece) {
                if (!first) first = performance.now();
                answer += piece;
              }
              if (chunk.usage) {
                tokens += chunk.usage.completion_tokens;
                cached += chunk.usage.prompt_tokens_details.cached_tokens;
              }
            }
            if (first) firstTokens.push(first - start);
          } else {
            const r = await c.chat.completions.create({
              model: "m", messages, max_tokens: MAX_TOKENS, temperature: 0.7, seed: id * 1000 + i });
            answer = r.choices[0].message.content;
            tokens += r.usage.completion_tokens;
            cached += r.usage.prompt_tokens_details.cached_tokens;
          }
          latencies.push(performance.now() - start);
          messages.push({ role: "assistant", content: answer });
        } catch (e) {
          ++errors;
          if (errorMessages.length < 5) errorMessages.push(String(e && e.message));
          messages.pop();
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, id) => client(id)));
  } finally {
    const wall = (performance.now() - t0) / 1000;
    const m = await metrics(server.url).catch(() => ({}));
    const code = await server.stop();
    latencies.sort((a, b) => a - b);
    firstTokens.sort((a, b) => a - b);
    const summary = {
      model: MODEL, clients: CLIENTS, requests_per_client: REQUESTS, slots: SLOTS, max_tokens: MAX_TOKENS,
      requests: latencies.length, errors, wall_s: +wall.toFixed(2),
      latency_ms: { p50: +percentile(latencies, 50).toFixed(1), p99: +percentile(latencies, 99).toFixed(1),
                    max: +percentile(latencies, 100).toFixed(1) },
      first_token_ms_streamed: { p50: +percentile(firstTokens, 50).toFixed(1), p99: +percentile(firstTokens, 99).toFixed(1) },
      generated_tokens: tokens, aggregate_tok_per_s: +(tokens / wall).toFixed(1),
      prompt_tokens_reused: cached, requests_per_s: +(latencies.length / wall).toFixed(2),
      server: { tokens_predicted_total: m.tokens_predicted_total, prompt_tokens_total: m.prompt_tokens_total,
                prompt_tokens_reused_total: m.prompt_tokens_reused_total,
                n_busy_slots_per_decode: m.n_busy_slots_per_decode, requests_finished_total: m.requests_finished_total },
      exit_code: code,
    };
    console.log(`strata serve load: ${JSON.stringify(summary)}`);
    console.log(`strata serve load: ${summary.requests} requests in ${summary.wall_s} s, latency p50 ` +
                `${summary.latency_ms.p50} ms, p99 ${summary.latency_ms.p99} ms; ${summary.aggregate_tok_per_s} ` +
                `generated tok/s aggregate; ${errors} errors`);
    if (process.env.STRATA_LOAD_OUT) fs.writeFileSync(process.env.STRATA_LOAD_OUT, JSON.stringify(summary, null, 2));
    assert.equal(errors, 0, `failed requests: ${errorMessages.join(" | ")}`);
    assert.equal(latencies.length, CLIENTS * REQUESTS);
    assert.equal(m.requests_finished_total, CLIENTS * REQUESTS, "the server counted every request");
    assert.equal(m.tokens_predicted_total, tokens, "the server's token count matches the clients'");
    if (SLOTS > 1) assert.ok(m.n_busy_slots_per_decode > 1, "requests were batched together");
    assert.ok(cached > 0, "follow-up turns reused their slots");
    assert.equal(code, 0);
  }
});

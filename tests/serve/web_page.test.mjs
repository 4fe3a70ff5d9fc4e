// The chat page at / in headless Chromium (Debian's chromium, driven by
// playwright-core): type a message, see the answer stream in with its speed,
// ask a follow-up (the slot is reused), stop a long answer, and see an
// error when the API key is wrong. A screenshot is left in the build folder.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { BIN, makePack, packGguf, requireDep, scratch, sharedFile, startServer } from "./lib/harness.mjs";

const { chromium } = requireDep("playwright-core");
const CHROMIUM = process.env.STRATA_CHROMIUM || "/usr/bin/chromium";

let server, context, page, dir;

before(async () => {
  dir = scratch("web");
  // The trained stories model writes readable text for the screenshot; the
  // synthetic one stands in when ../shared/data is missing and allowed to be.
  const gguf = sharedFile("models/stories260K.gguf");
  const pack = gguf ? packGguf(gguf, dir, "stories") : makePack(dir);
  // -n: the server's default max_tokens (the page sends none; the stories model rarely stops by itself).
  server = await startServer(pack, ["--parallel", "2", "--api-key", "page-key", "-n", "60", "--test-step-delay-ms", "5"]);
  const profile = path.join(dir, "chromium-profile");  // an empty --user-data-dir
  fs.mkdirSync(profile);
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run"],
    viewport: { width: 1000, height: 700 },
  });
  page = context.pages()[0] || (await context.newPage());
  // The page must not reach anything but the server.
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(server.url)) return route.continue();
    return route.abort();
  });
  page.on("pageerror", (e) => { throw e; });
});

after(async () => {
  if (context) await context.close();
  if (server) assert.equal(await server.stop(), 0);
});

test("the page chats with the server and shows the speed", { timeout: 120000 }, async () => {
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(server.url + "/");
  assert.equal(await page.title(), "Strata chat");
  // Without the key the model line says what is wrong.
  await page.waitForFunction(() => /API key/.test(document.getElementById("model").textContent));
  await page.fill("#apikey", "page-key");
  await page.dispatchEvent("#apikey", "change");
  await page.waitForFunction(() => /context \d+/.test(document.getElementById("model").textContent));

  await page.fill("#input", "Once upon a time");
  await page.press("#input", "Enter");
  // The finish_reason chunk comes before the usage chunk (stream_options.include_usage): wait for the
  // stream to end (Send enabled again), not only for the finish, before reading the prompt counts.
  await page.waitForFunction(() => /finish: (stop|length)/.test(document.getElementById("speed").textContent) &&
                                   !document.getElementById("send").disabled, null, { timeout: 60000 });
  const answer = await page.textContent(".msg.assistant");
  assert.ok(answer.length > 0, "the answer appeared");
  const speed = await page.textContent("#speed");
  assert.match(speed, /\d+ tokens, [\d.]+ tok\/s/);
  assert.match(speed, /prompt \d+ tokens \(0 reused\)/);

  // A follow-up reuses the conversation's slot.
  await page.fill("#input", "What happened next?");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 2 &&
                                   /finish: /.test(document.getElementById("speed").textContent) &&
                                   !document.getElementById("send").disabled, null, { timeout: 60000 })
    .catch(async (e) => {
      await page.screenshot({ path: path.join(BIN, "serve-web-page-failure.png") });
      throw new Error(`${e.message}\npage: ${await page.textContent("body")}\nserver log:\n${server.log()}`);
    });
  const reused = Number((await page.textContent("#speed")).match(/\((\d+) reused\)/)[1]);
  assert.ok(reused > 0, "the follow-up reused the slot");
  await page.screenshot({ path: path.join(BIN, "serve-web-page.png") });

  // Model text is shown as text, never as HTML.
  assert.equal(await page.locator(".msg.assistant script, .msg.assistant img").count(), 0);
  assert.ok(requests.every((u) => u.startsWith(server.url)), `only the server was contacted: ${requests}`);
});

test("Stop ends a long answer and the page stays usable", { timeout: 120000 }, async () => {
  await page.click("#clear");
  await page.fill("#input", "Tell me a very long story");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector(".msg.assistant") &&
                                   document.querySelector(".msg.assistant").textContent.length > 0, null,
                             { timeout: 60000 });
  await page.click("#stop");
  await page.waitForFunction(() => /finish: (stopped|stop|length)/.test(document.getElementById("speed").textContent) &&
                                   !document.getElementById("send").disabled, null, { timeout: 60000 });
  // A wrong key: the error is shown in the conversation.
  await page.fill("#apikey", "wrong");
  await page.dispatchEvent("#apikey", "change");
  await page.fill("#input", "hello?");
  await page.click("#send");
  await page.waitForSelector(".msg.error", { timeout: 30000 });
  assert.match(await page.textContent(".msg.error"), /API key/);
});

test("conversations survive a reload; answers render Markdown, thinking and tool calls, never HTML; settings apply",
     { timeout: 120000 }, async () => {
  const stored = {
    id: "t1", title: "stored chat", messages: [
      { role: "user", content: "show me" },
      { role: "assistant", reasoning_content: "I should answer <b>carefully</b>.",
        content: "# Title\n\nSome **bold** and `code` <img src=x onerror=\"window.pwned=1\"> " +
                 "<script>window.pwned=2</script>\n\n```js\nconst x = '<b>';\n```\n- one\n- two",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }],
        stats: "3 tokens" }] };
  await page.evaluate((c) => localStorage.setItem("strata-conversations", JSON.stringify([c])), stored);
  await page.reload();
  await page.waitForSelector(".msg.assistant strong");
  assert.equal(await page.textContent(".msg.assistant strong"), "bold");
  assert.equal(await page.textContent(".msg.assistant p code"), "code");
  assert.equal(await page.textContent(".msg.assistant pre code"), "const x = '<b>';");
  assert.equal(await page.locator(".msg.assistant li").count(), 2);
  assert.equal(await page.locator(".msg.assistant h1").count(), 1);
  // Markup in model text is text: no element from it, no script run.
  assert.equal(await page.locator(".msg img, .msg script, .msg b").count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.match(await page.textContent(".msg.assistant"), /<img src=x/);
  assert.match(await page.textContent("details.thinking"), /answer <b>carefully<\/b>/);
  assert.match(await page.textContent(".toolcall"), /get_weather\(\{"city":"Oslo"\}\)/);
  assert.match(await page.textContent("#chats"), /stored chat/);
  await page.click("details.thinking summary");
  await page.screenshot({ path: path.join(BIN, "serve-web-page-rendering.png") });

  // Settings: max tokens 3 limits the next answer, and they persist.
  await page.fill("#apikey", "page-key");
  await page.dispatchEvent("#apikey", "change");
  await page.click("#settings summary");
  await page.fill("#max_tokens", "3");
  await page.dispatchEvent("#max_tokens", "change");
  await page.click("#clear");
  await page.fill("#input", "Once upon a time");
  await page.click("#send");
  await page.waitForFunction(() => /finish: (stop|length)/.test(document.getElementById("speed").textContent) &&
                                   !document.getElementById("send").disabled, null, { timeout: 60000 });
  assert.match(await page.textContent("#speed"), /^[0-3] tokens/);
  await page.reload();
  await page.waitForSelector(".msg.assistant");
  assert.equal(await page.inputValue("#max_tokens"), "3");
  assert.equal(await page.locator(".msg.user").count(), 1);  // the newest conversation, shown again
  assert.equal(await page.locator("#chats button").count(), 2);
});

// The web inspector in a real headless Chromium (Debian's `chromium`),
// driven by puppeteer-core: the fleet page of a simulated outage, drilling
// into a FAILED instance by its links, a migration applied from the page
// under `qflow serve`, and a live update arriving without a reload.
//
// Screenshots go to target/browser-screenshots/*.png.
//
// Without a browser the tests skip with a message, unless
// QFLOW_REQUIRE_BROWSER=1 (CI sets it), which makes that a failure.
// QFLOW_BIN names the qflow binary (default: target/debug/qflow);
// CHROMIUM the browser (default: chromium or chromium-browser on PATH).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..", "..");
const qflowBin = process.env.QFLOW_BIN || path.join(repo, "target", "debug", "qflow");
const shots = path.join(repo, "target", "browser-screenshots");
const sample = (name) => path.join(repo, "samples", name);

function findChromium() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
    } catch {
      // not this one
    }
  }
  return null;
}

const chromium = findChromium();
const required = process.env.QFLOW_REQUIRE_BROWSER === "1";
let skip = false;
if (!chromium || !existsSync(qflowBin)) {
  const why = !chromium
    ? "no chromium on PATH (apt-get install chromium, or set CHROMIUM)"
    : `no qflow binary at ${qflowBin} (cargo build, or set QFLOW_BIN)`;
  if (required) {
    test("the browser tests can run", () => assert.fail(`QFLOW_REQUIRE_BROWSER=1 but ${why}`));
  } else {
    console.log(`skipping the inspector's browser tests: ${why}`);
  }
  skip = true;
}

const qflow = (...args) => execFileSync(qflowBin, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
// qflow run exits 1 for a FAILED instance: the store is what is wanted.
const qflowAny = (...args) => {
  try {
    return qflow(...args);
  } catch (e) {
    if (e.status === 1) return e.stdout;
    throw e;
  }
};

/** Start a server command; resolves with its base URL once it listens. */
function startServer(args, env = {}) {
  const child = spawn(qflowBin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let out = "";
    const look = (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/(127\.0\.0\.1:\d+)/);
      if (m) resolve({ child, base: `http://${m[1]}` });
    };
    child.stdout.on("data", look);
    child.stderr.on("data", look);
    child.on("exit", (code) => reject(new Error(`${args.join(" ")} exited ${code}: ${out}`)));
  });
}

function freePort() {
  // A port from the kernel, released at once for the server to take.
  return new Promise((resolve) => {
    import("node:net").then(({ createServer }) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
    });
  });
}

let puppeteer;
let browser;
let dir;
const servers = [];

before(async () => {
  if (skip) return;
  puppeteer = (await import("puppeteer-core")).default;
  mkdirSync(shots, { recursive: true });
  dir = mkdtempSync(path.join(tmpdir(), "qflow-browser-"));
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  for (const s of servers) s.child.kill();
  if (browser) await browser.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A store of DBG-08's long outage: `failed` exhausted, one parked. */
function outageStore(name, failed, { breaker = false } = {}) {
  const db = path.join(dir, name);
  if (breaker) {
    // 20 jobs through a 2 h outage with a circuit breaker on the charge:
    // they complete once it is over, and the breaker's moves are kept.
    const handlers = path.join(dir, `${name}.handlers.toml`);
    writeFileSync(
      handlers,
      '[tasks."payments.charge"]\ncommand = "true"\n\n[tasks."payments.charge".breaker]\n' +
        'consecutive_failures = 5\nopen_for = "5m"\ncanaries = 2\nrelease_ramp = "10,50,200/min"\n',
    );
    qflow("simulate", sample("dbg08-long-outage.bpmn"), "--jobs", "20", "--outage", "2h", "--handlers", handlers, "--db", db);
  }
  qflow("simulate", sample("dbg08-long-outage.bpmn"), "--jobs", String(failed), "--outage", "20h", "--db", db);
  qflow("simulate", sample("dbg08-long-outage.bpmn"), "--jobs", "40", "--outage", "2h", "--db", db);
  qflowAny("run", sample("dbg08-long-outage.bpmn"), "--until", "1h", "--db", db);
  return db;
}

async function newPage() {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  // Every request the page makes: none may leave this host.
  page.requests = [];
  page.on("request", (r) => page.requests.push(r.url()));
  return page;
}

test("the fleet page of a simulated outage shows the counts per node and links every failed instance", { skip }, async () => {
  const db = outageStore("fleet.db", 200, { breaker: true });
  // The parked instance held by a pause, then let go by a ramp.
  qflow("pause", "--dependency", "payments.charge", "--db", db);
  qflow("unpause", "--dependency", "payments.charge", "--ramp", "1/min", "--db", db);
  const ui = await startServer(["ui", "--db", db, "--listen", "127.0.0.1:0"]);
  servers.push(ui);
  const page = await newPage();
  await page.goto(`${ui.base}/ui/`, { waitUntil: "load" });
  assert.equal(await page.$eval("[data-count=failed]", (e) => e.textContent), "200");
  assert.equal(await page.$eval("[data-count=completed]", (e) => e.textContent), "60");
  // The load per minute per dependency, the last 60 minutes: the page
  // shows what /ui/fleet.json (the engine's read) answers.
  const json = await (await fetch(`${ui.base}/ui/fleet.json`)).json();
  const dep = json.load_window.dependencies[0];
  assert.equal(dep.dependency, "payments.charge");
  const requests = dep.requests_per_minute.reduce((a, b) => a + b, 0);
  assert.ok(requests > 0, JSON.stringify(json.load_window));
  const row = await page.waitForSelector("#load-table tr[data-dependency='payments.charge']");
  assert.equal(await row.$eval("[data-requests]", (e) => e.dataset.requests), String(requests));
  assert.equal(await row.$$eval("svg.pairs rect.requests", (r) => r.length), 60 + 1, "a bar per minute and the legend's");
  assert.match(await page.$eval("#load-per-minute", (e) => e.textContent), /the last 60 minutes/);
  // Beside the pauses: the breaker and the ramp in force.
  assert.match(await page.$eval("#breakers-table", (e) => e.textContent), /payments\.charge\s*closed/);
  assert.match(await page.$eval("#ramps-table", (e) => e.textContent), /dependency payments\.charge\s*ramp 1\/min/);
  // The engine's drawing, with the fleet's counts on the task.
  const note = await page.$eval("svg.qflow-diagram", (e) => e.textContent);
  assert.match(note, /1 parked · 200 failed/);
  assert.match(await page.content(), /DEPENDENCY_DOWN/);
  for (const url of page.requests) assert.ok(url.startsWith(ui.base), `a request to another host: ${url}`);
  await page.screenshot({ path: path.join(shots, "fleet.png"), fullPage: true });
  await page.close();
});

test("drilling into a FAILED instance by its links reads its failure message", { skip }, async () => {
  const db = outageStore("drill.db", 120);
  const ui = await startServer(["ui", "--db", db, "--listen", "127.0.0.1:0"]);
  servers.push(ui);
  const page = await newPage();
  await page.goto(`${ui.base}/ui/`, { waitUntil: "load" });
  // The failure code's link, then the second page, then an instance.
  await Promise.all([page.waitForNavigation(), page.click("a[href*='code=DEPENDENCY_DOWN']")]);
  assert.match(await page.$eval("#range", (e) => e.textContent), /1–50 of 120/);
  await Promise.all([page.waitForNavigation(), page.click("a[rel=next]")]);
  assert.match(await page.$eval("#range", (e) => e.textContent), /51–100 of 120/);
  assert.match(page.url(), /code=DEPENDENCY_DOWN&status=failed&page=2|status=failed&code=DEPENDENCY_DOWN&page=2|page=2/);
  const first = await page.$eval("#instances a.mono", (a) => a.textContent);
  await page.screenshot({ path: path.join(shots, "instances.png"), fullPage: false });
  await Promise.all([page.waitForNavigation(), page.click("#instances a.mono")]);
  assert.equal(await page.$eval("#instance-id", (e) => e.textContent), first);
  assert.equal(
    await page.$eval("#failure-message", (e) => e.textContent),
    "the dependency is down (simulated outage)",
  );
  // Its timeline: six attempts, each with its code and class.
  const rows = await page.$$eval("table.timeline tr", (trs) => trs.map((t) => t.textContent));
  assert.equal(rows.length, 7, rows.join("\n"));
  assert.match(rows[6], /DEPENDENCY_DOWN.*transient/);
  await page.screenshot({ path: path.join(shots, "instance.png"), fullPage: true });
  await page.close();
});

test("under qflow serve a FAILED instance is repaired by migration from its page, and its page follows live", { skip }, async () => {
  const db = outageStore("serve.db", 3);
  qflow("deploy", sample("dbg08-repaired.bpmn"), "--db", db);
  const handlers = path.join(dir, "handlers.toml");
  writeFileSync(handlers, '[tasks."payments.charge"]\ncommand = "true"\n');
  const port = await freePort();
  const serve = await startServer(["serve", "--db", db, "--handlers", handlers, "--listen", `127.0.0.1:${port}`]);
  servers.push(serve);
  const page = await newPage();
  await page.goto(`${serve.base}/ui/instances/dbg08-2`, { waitUntil: "load" });
  await page.evaluate(() => { window.notReloaded = true; });
  assert.match(await page.$eval("#live", (e) => e.textContent), /FAILED/);
  await Promise.all([page.waitForNavigation(), page.click("#migrate-link")]);
  // The preview: the suggested deployment, its mapping and the plan.
  assert.equal(await page.$eval("#to", (s) => s.value), "2");
  const plan = await page.$eval("#plan", (e) => e.textContent);
  assert.match(plan, /FAILED → (WAITING|RUNNING)/);
  assert.match(plan, /charge → chargeCard/);
  await page.screenshot({ path: path.join(shots, "migrate-plan.png"), fullPage: true });
  await Promise.all([page.waitForNavigation(), page.click("#confirm")]);
  assert.match(await page.$eval("#result", (e) => e.textContent), /applied: dbg08-2 is on deployment 2/);
  await page.screenshot({ path: path.join(shots, "migrated.png"), fullPage: false });
  // Back on its page: the server finishes it, and the page shows it
  // without a reload (the event stream replaces the live part).
  await Promise.all([page.waitForNavigation(), page.click("a[href='/ui/instances/dbg08-2']")]);
  await page.evaluate(() => { window.notReloaded = true; });
  await page.waitForFunction(
    () => /COMPLETED/.test(document.querySelector("#live").textContent),
    { timeout: 30000 },
  );
  assert.equal(await page.evaluate(() => window.notReloaded), true, "the page was reloaded");
  await page.screenshot({ path: path.join(shots, "instance-completed.png"), fullPage: false });
  await page.close();
});

test("the fleet page's counts move as instances start and complete, without a reload", { skip }, async () => {
  const db = outageStore("live.db", 2);
  const handlers = path.join(dir, "live-handlers.toml");
  writeFileSync(handlers, '[tasks."payments.charge"]\ncommand = "true"\n');
  const port = await freePort();
  const serve = await startServer(["serve", "--db", db, "--handlers", handlers, "--listen", `127.0.0.1:${port}`]);
  servers.push(serve);
  const page = await newPage();
  await page.goto(`${serve.base}/ui/`, { waitUntil: "domcontentloaded" });
  await page.evaluate(() => { window.notReloaded = true; });
  const before = Number(await page.$eval("[data-count=completed]", (e) => e.textContent));
  for (let i = 0; i < 3; i++) {
    const r = await fetch(`${serve.base}/processes/dbg08/instances`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ orderId: `live-${i}`, amount: 1 }),
    });
    assert.equal(r.status, 201);
  }
  await page.waitForFunction(
    (n) => Number(document.querySelector("[data-count=completed]").textContent) >= n,
    { timeout: 30000 },
    before + 3,
  );
  assert.equal(await page.evaluate(() => window.notReloaded), true, "the page was reloaded");
  assert.ok(Number(await page.$eval("#live", (e) => e.dataset.updates)) >= 1);
  await page.screenshot({ path: path.join(shots, "fleet-live.png"), fullPage: false });
  await page.close();
});

test("a paused dependency is let go by a ramp whose preview is drawn before it is confirmed", { skip }, async () => {
  const db = outageStore("ramp.db", 5);
  qflow("pause", "--dependency", "payments.charge", "--db", db);
  const ui = await startServer(["ui", "--db", db, "--listen", "127.0.0.1:0", "--allow-actions"]);
  servers.push(ui);
  const page = await newPage();
  await page.goto(`${ui.base}/ui/`, { waitUntil: "load" });
  // From the pause in force, by its link.
  await Promise.all([page.waitForNavigation(), page.click("a[href*='/actions/unpause?kind=dependency']")]);
  await page.type("#ramp-form input[name=ramp]", "1/min");
  await Promise.all([page.waitForNavigation(), page.click("#preview-ramp")]);
  const chart = await page.waitForSelector("#ramp-preview figure[data-dependency='payments.charge']");
  assert.equal(await chart.evaluate((e) => e.dataset.peakWith), "1");
  const bars = await chart.$$eval("svg rect.with", (r) => r.map((b) => Number(b.getAttribute("height"))));
  assert.ok(bars.length >= 1 && bars.some((h) => h > 0), `bars drawn: ${bars}`);
  const box = await chart.$eval("svg", (s) => s.getBoundingClientRect().height);
  assert.ok(box > 50, `the chart has its height in the page: ${box}`);
  await page.screenshot({ path: path.join(shots, "ramp-preview.png"), fullPage: true });
  await page.type("input[name=reason]", "bank back");
  await Promise.all([page.waitForNavigation(), page.click("#confirm")]);
  assert.match(await page.$eval("#result", (e) => e.textContent), /released by ramp \d+ \(ramp 1\/min\)/);
  const stats = JSON.parse(qflow("stats", "--format", "json", "--db", db));
  assert.equal(stats.releases[0].ramp, "1/min");
  assert.equal(stats.releases[0].reason, "bank back");
  for (const url of page.requests) assert.ok(url.startsWith(ui.base), `a request to another host: ${url}`);
  await page.close();
});

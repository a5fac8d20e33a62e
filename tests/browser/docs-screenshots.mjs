// Re-takes the screenshots of docs/inspector.md from the commands that page
// walks, so the pictures in the docs are the pages of today's binary and not
// a hand-made capture: `npm run screenshots` (after `cargo build`), then look
// at the images and commit them.
//
// QFLOW_BIN names the qflow binary (default: target/debug/qflow); CHROMIUM the
// browser (default: chromium on PATH). It writes docs/img/inspector-fleet.png
// (the top of the fleet page), docs/img/inspector-load.png (the last hour's
// attempts and requests per dependency) and docs/img/inspector-instance.png
// (a FAILED instance).

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const qflowBin = process.env.QFLOW_BIN || path.join(repo, "target", "debug", "qflow");
const chromium =
  process.env.CHROMIUM || execFileSync("sh", ["-c", "command -v chromium || command -v chromium-browser"], { encoding: "utf8" }).trim();
const img = path.join(repo, "docs", "img");
const dir = mkdtempSync(path.join(tmpdir(), "qflow-docs-shots-"));
// Relative, as the page shows it: the commands run in the scratch directory.
const db = "fleet.db";
const sample = path.join(repo, "samples", "dbg08-long-outage.bpmn");

// The commands of docs/inspector.md, in its order; `run` exits 1 for a
// FAILED instance and 0 for the parked one: either leaves the store wanted.
function qflow(...args) {
  try {
    execFileSync(qflowBin, args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  } catch (e) {
    if (e.status !== 1) throw e;
  }
}
qflow("simulate", sample, "--jobs", "200", "--outage", "20h", "--db", db);
qflow("run", sample, "--until", "1h", "--db", db);

const server = spawn(qflowBin, ["ui", "--db", db, "--listen", "127.0.0.1:0"], {
  cwd: dir,
  stdio: ["ignore", "pipe", "pipe"],
});
const base = await new Promise((resolve, reject) => {
  let out = "";
  const look = (chunk) => {
    out += chunk;
    const m = out.match(/http:\/\/(127\.0\.0\.1:\d+)/);
    if (m) resolve(`http://${m[1]}`);
  };
  server.stdout.on("data", look);
  server.stderr.on("data", look);
  server.on("exit", (code) => reject(new Error(`qflow ui exited ${code}: ${out}`)));
});

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 1000 });
  await page.goto(`${base}/ui/`, { waitUntil: "load" });
  await page.screenshot({ path: path.join(img, "inspector-fleet.png") });
  // The load window: its heading, the note under it and the table, on a
  // page wide enough for the table and its hour of bars.
  await page.setViewport({ width: 1280, height: 1000 });
  const box = await page.evaluate(() => {
    const h = document.querySelector("#load-per-minute");
    const t = document.querySelector("#load-table") || h.nextElementSibling;
    const a = h.getBoundingClientRect();
    const b = t.getBoundingClientRect();
    return { x: 0, y: a.top + window.scrollY - 12, width: 1280, height: b.bottom - a.top + 24 };
  });
  await page.screenshot({ path: path.join(img, "inspector-load.png"), clip: box, captureBeyondViewport: true });
  // A FAILED instance, reached by its link as a person would.
  await page.setViewport({ width: 1000, height: 1000 });
  const href = await page.$eval("a[href*='/ui/instances/dbg08-']", (a) => a.getAttribute("href"));
  await page.goto(new URL(href, base).toString(), { waitUntil: "load" });
  await page.screenshot({ path: path.join(img, "inspector-instance.png") });
  console.log(`wrote ${img}/inspector-{fleet,load,instance}.png from ${href}`);
} finally {
  await browser.close();
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}

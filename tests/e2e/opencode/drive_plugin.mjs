// Drive hooks/opencode/ctxward.js under plain Node, the way OpenCode 1.18.33 calls it, without
// OpenCode: for the plugin's own contract tests (test_plugin.py), which need only `node`.
//
//   node drive_plugin.mjs PLUGIN.js < scenario.json
//
// scenario: {"ctx": {"directory", "worktree", "summary": str|null},
//            "steps": [{"hook": "<hook name>", "input": {...}, "output": {...}}]}
// For hook "event", `input` is the {event} object and the call is not awaited (as in OpenCode).
// Prints {"results": [{"output", "error"}], "logs": [{level, message}], "messageReads": n}
// after the plugin's dispose hook has finished.

import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const scenario = JSON.parse(readFileSync(0, "utf8"))
const plugin = (await import(pathToFileURL(process.argv[2]).href)).default
const logs = []
let messageReads = 0

const client = {
  app: {
    log: async ({ body }) => {
      logs.push({ level: body.level, service: body.service, message: body.message })
      return { data: true }
    },
  },
  session: {
    messages: async ({ path }) => {
      messageReads += 1
      const summary = scenario.ctx.summary
      if (summary === null || summary === undefined) return { data: [] }
      const info = { id: "msg_s", sessionID: path.id, role: "assistant", summary: true }
      const parts = [
        { type: "step-start" },
        { type: "text", text: summary },
      ]
      return { data: [{ info: { role: "user", summary: { diffs: [] } }, parts: [] }, { info, parts }] }
    },
  },
}

const hooks = await plugin.server({
  client,
  directory: scenario.ctx.directory,
  worktree: scenario.ctx.worktree ?? scenario.ctx.directory,
  project: {},
  serverUrl: new URL("http://localhost:4096/"),
})

const results = []
for (const step of scenario.steps) {
  const output = step.output ?? {}
  let error = null
  try {
    if (step.hook === "event") void hooks.event(step.input)
    else await hooks[step.hook](step.input, output)
  } catch (thrown) {
    error = thrown instanceof Error ? thrown.message : `not an Error: ${String(thrown)}`
  }
  results.push({ output, error })
}
await hooks.dispose()
process.stdout.write(JSON.stringify({ results, logs, messageReads }))

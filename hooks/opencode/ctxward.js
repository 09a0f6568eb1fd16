// ctxward for OpenCode: a thin plugin over `ctxward hook EVENT --host opencode`.
//
// OpenCode's V1 plugin API (npm `opencode-ai` 1.x; tested with 1.18.33; the `{id, server}`
// default export needs 1.3.4 or later). Not the V2 API (`@opencode/cli` 2.x), which runs no V1
// plugin. Install: `ctxward install opencode`, which copies this one file into
// `.opencode/plugin/` of a project (or `~/.config/opencode/plugin/` with --scope user) and sets
// INSTALLED_BIN below to the absolute path of its `ctxward`, so OpenCode started without it on
// PATH (an IDE, a desktop launcher) still runs it. Copied by hand, the plugin finds `ctxward` on
// PATH or in ~/.local/bin ($CTXWARD_BIN overrides all three). Node built-ins only, no runtime
// import of @opencode-ai/plugin: OpenCode loads it as is, with no install step.
//
// What it does (the decisions are all ctxward's; this file only carries JSON both ways):
//
// - tool.execute.before, tool `task`: the G9 dispatch guard. A deny throws an Error whose
//   message is the reason (OpenCode hands it to the model as the tool result, and no sub-agent
//   starts); a C9 offload rewrites `output.args.prompt` in place; a warning for the model is
//   appended to the task's result in tool.execute.after.
// - experimental.session.compacting: the invariants' instructions go into `output.context`,
//   which OpenCode appends to the summarizer's prompt.
// - experimental.chat.system.transform: after a compaction (and in a session reopened from an
//   earlier process) the active invariants the summary lacks are a system message of every
//   request. The answer is cached per session until one of the files ctxward names in `watch`
//   changes, so a request costs a few stat() calls, not a Python start.
// - event session.compacted: the summary is read back and ctxward writes its survival report
//   and what the summary kept; the lost or altered rules that the system message has no room
//   for (ctxward's `restate`) go into the session's next request, once.
// - tool.execute.after (every tool) and event message.part.updated (a tool part that errored):
//   the drift observer (seed 002). Each call is handed to ctxward without delaying the tool
//   (not awaited; one session's calls in order); when a stuck pattern starts, ctxward answers
//   a fact for the model, which goes into the session's next request as a system message
//   (experimental.chat.system.transform waits for the observations still running).
//   experimental.text.complete resets the session's count of calls since the last text
//   (silence drift).
//
// Failures: the dispatch guard FAILS CLOSED. If ctxward cannot be started, times out, exits
// non-zero or answers something unreadable, the task call is blocked and the error says why.
// When no ctxward is installed at all, every task call is blocked with the same one line (what
// is missing, how to fix it) and the other hooks do nothing, without trying to start it.
// Everything else FAILS OPEN: nothing is injected and one line goes to OpenCode's log
// (service "ctxward"), once per distinct problem. The JSON both ways is documented in
// ctxward/hosts/opencode.py.
//
// Settings (environment): CTXWARD_BIN (the program to run, as given); CTXWARD_HOOK_TIMEOUT_MS
// (default 30000 per call; 10000 for the per-request system transform).

import { spawn } from "node:child_process"
import { accessSync, constants, statSync } from "node:fs"
import { homedir } from "node:os"
import { delimiter, isAbsolute, join } from "node:path"
import { fileURLToPath } from "node:url"

const INSTALLED_BIN = "" // set by `ctxward install opencode`: the absolute path of its ctxward
const PLUGIN_FILE = (() => {
  try {
    return fileURLToPath(import.meta.url)
  } catch {
    return "this plugin file"
  }
})()
const TIMEOUT_MS = Number(process.env.CTXWARD_HOOK_TIMEOUT_MS) || 30000
const SYSTEM_TIMEOUT_MS = Math.min(TIMEOUT_MS, 10000)
const OBSERVE_TIMEOUT_MS = Math.min(TIMEOUT_MS, 10000)
const MAX_REMEMBERED = 1024 // failed tool parts (and sessions' system answers) remembered
const DISPATCH_TOOLS = new Set(["task"])
const GUARD_KEYS = new Set(["deny", "args", "note", "notice"])
const MAX_OUTPUT = 16 * 1024 * 1024

function runnable(path) {
  try {
    return isAbsolute(path) && statSync(path).isFile() && (accessSync(path, constants.X_OK), true)
  } catch {
    return false
  }
}

// The ctxward to run: $CTXWARD_BIN as given, else INSTALLED_BIN, `ctxward` on PATH (absolute
// folders only: a relative one names the project, which may be a hostile clone), or
// ~/.local/bin/ctxward, whichever is an executable file first; null when none is.
function findCtxward() {
  if (process.env.CTXWARD_BIN) return process.env.CTXWARD_BIN
  const onPath = (process.env.PATH || "").split(delimiter).filter((dir) => isAbsolute(dir))
  const candidates = [INSTALLED_BIN, ...onPath.map((dir) => join(dir, "ctxward"))]
  candidates.push(join(homedir(), ".local", "bin", "ctxward"))
  return candidates.find((path) => path && runnable(path)) ?? null
}

// The one line of a call that no ctxward can answer (the guard's, and the log's).
function missingLine(what) {
  const where = `${INSTALLED_BIN ? `not at ${INSTALLED_BIN}, ` : ""}not on PATH, not in ~/.local/bin`
  return (
    `ctxward blocked this ${what}: the dispatch guard cannot run, ctxward is missing (${where}). ` +
    `Install ctxward (pipx install ctxward), then run: ctxward install opencode ` +
    `(or remove ${PLUGIN_FILE}).`
  )
}

// What the other hooks log, once, when no ctxward is installed.
function missingNotice() {
  return (
    `ctxward is missing (${INSTALLED_BIN ? `not at ${INSTALLED_BIN}, ` : ""}not on PATH, not in ` +
    `~/.local/bin): its hooks do nothing in this session and task calls are blocked. Install ` +
    `ctxward (pipx install ctxward), then run: ctxward install opencode.`
  )
}

// Run `ctxward hook <event> --host opencode` with `payload` on stdin.
// Resolves {ok: true, answer} or {ok: false, why, missing}; never rejects.
function runCtxward(event, payload, cwd, timeoutMs) {
  const COMMAND = findCtxward()
  if (COMMAND === null) return Promise.resolve({ ok: false, missing: true, why: missingLine("call") })
  return new Promise((resolve) => {
    let settled = false
    let stdout = ""
    let stderr = ""
    let timer
    const finish = (result) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(result)
    }
    let child
    try {
      child = spawn(COMMAND, ["hook", event, "--host", "opencode"], {
        cwd,
        stdio: ["pipe", "pipe", "pipe"],
      })
    } catch (error) {
      finish({ ok: false, why: `cannot start ${COMMAND}: ${error.message}` })
      return
    }
    timer = setTimeout(() => {
      child.kill("SIGKILL")
      finish({ ok: false, why: `${COMMAND} hook ${event} timed out after ${timeoutMs} ms` })
    }, timeoutMs)
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk) => {
      if (stdout.length < MAX_OUTPUT) stdout += chunk
    })
    child.stderr.on("data", (chunk) => {
      if (stderr.length < MAX_OUTPUT) stderr += chunk
    })
    child.on("error", (error) => {
      finish({ ok: false, why: `cannot run ${COMMAND} (is it on PATH?): ${error.message}` })
    })
    child.on("close", (code, signal) => {
      if (code !== 0) {
        const line = stderr.trim().split("\n").pop()
        finish({ ok: false, why: line || `${COMMAND} hook ${event} exited ${code ?? signal}` })
        return
      }
      if (!stdout.trim()) {
        finish({ ok: true, answer: {} })
        return
      }
      try {
        const answer = JSON.parse(stdout)
        if (answer && typeof answer === "object" && !Array.isArray(answer)) {
          finish({ ok: true, answer })
          return
        }
      } catch {
        // falls through to the error below
      }
      finish({ ok: false, why: `${COMMAND} hook ${event} printed something that is not a JSON object` })
    })
    child.stdin.on("error", () => {}) // EPIPE when ctxward exits before reading everything
    child.stdin.end(JSON.stringify(payload))
  })
}

function strings(value) {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string" && item) : []
}

// mtime, size and inode of each path ("-" when absent): the cache key of an answer.
function fingerprint(paths) {
  return paths
    .map((path) => {
      try {
        const stat = statSync(path)
        return `${stat.mtimeMs}:${stat.size}:${stat.ino}`
      } catch {
        return "-"
      }
    })
    .join("|")
}

export default {
  id: "ctxward",
  async server(ctx) {
    const directory = ctx.directory
    const worktree = ctx.worktree
    const created = new Set() // sessions this process saw created
    const compacted = new Set() // sessions this process saw compacted
    const autoCompacting = new Set() // sessions whose compaction was automatic
    const notes = new Map() // callID -> text for the model, appended to the task's result
    const systemAnswers = new Map() // source (and sessionID) -> {system, watch, key}
    const pending = new Set() // post-compact work and observations still running (awaited on dispose)
    const logged = new Set()
    const quiet = new Map() // sessionID -> tool calls since the model's last text part
    const observing = new Map() // sessionID -> the last observation of the session still running
    const afterCompacting = new Map() // sessionID -> its post-compact call still running
    const restate = new Map() // sessionID -> texts for its next request, once (post-compact)
    const driftNotes = new Map() // sessionID -> drift facts for the session's next request
    const compacting = new Set() // sessions between experimental.session.compacting and compacted
    const failedParts = new Set() // callIDs of errored tool parts already observed

    const log = (level, message) => {
      if (logged.has(message)) return // say each distinct problem once per process
      logged.add(message)
      try {
        Promise.resolve(ctx.client.app.log({ body: { service: "ctxward", level, message } })).catch(
          () => {},
        )
      } catch {
        // logging must never break a hook
      }
    }

    // A hook that failed says so in the log: the missing ctxward as one notice for them all.
    const failed = (result, level, line) => {
      if (result.missing) log("warn", missingNotice())
      else log(level, line)
    }

    const call = (event, hook, input, extra, timeoutMs = TIMEOUT_MS) =>
      runCtxward(event, { hook, input, directory, worktree, ...extra }, directory, timeoutMs)

    const readSummary = async (sessionID) => {
      try {
        const response = await ctx.client.session.messages({ path: { id: sessionID } })
        const messages = Array.isArray(response?.data) ? response.data : []
        for (let i = messages.length - 1; i >= 0; i--) {
          const { info, parts } = messages[i] ?? {}
          if (info?.role === "assistant" && info.summary === true && Array.isArray(parts)) {
            const text = parts.filter((p) => p?.type === "text" && typeof p.text === "string")
            return text.map((p) => p.text).join("\n")
          }
        }
      } catch {
        // no summary: ctxward says so and writes no report
      }
      return null
    }

    const track = (work) => {
      pending.add(work)
      work.finally(() => pending.delete(work))
      return work
    }

    // Hand one tool call to the drift observer, after the session's earlier ones, unawaited.
    const observe = (event, hook, sessionID, input, plugin) => {
      if (!sessionID) return
      const count = (quiet.get(sessionID) ?? 0) + 1
      quiet.set(sessionID, count)
      const before = observing.get(sessionID) ?? Promise.resolve()
      const work = before.then(async () => {
        const result = await call(event, hook, input, { plugin: { ...plugin, quiet: count } }, OBSERVE_TIMEOUT_MS)
        if (!result.ok) {
          failed(result, "warn", `ctxward: ${event} (no drift check for this call): ${result.why}`)
          return
        }
        const note = result.answer.note
        if (typeof note === "string" && note) {
          driftNotes.set(sessionID, [...(driftNotes.get(sessionID) ?? []), note])
        }
        if (typeof result.answer.notice === "string") log("info", result.answer.notice)
      })
      observing.set(sessionID, work)
      track(work).finally(() => {
        if (observing.get(sessionID) === work) observing.delete(sessionID)
      })
    }

    const afterCompaction = async (event) => {
      const sessionID = event.properties?.sessionID
      const trigger = autoCompacting.delete(sessionID) ? "auto" : "manual"
      const summary = sessionID ? await readSummary(sessionID) : null
      const result = await call("post-compact", "event", { event }, { plugin: { trigger, summary } })
      if (!result.ok) failed(result, "warn", `ctxward: post-compact: ${result.why}`)
      else {
        if (result.answer.notice) log("info", result.answer.notice)
        // The rules the summary lost or altered: in the session's next request, once.
        const texts = strings(result.answer.restate)
        if (sessionID && texts.length) restate.set(sessionID, texts)
      }
    }

    return {
      "tool.execute.before": async (input, output) => {
        if (!DISPATCH_TOOLS.has(input.tool)) return
        const result = await call("pre-tool-use", "tool.execute.before", input, {
          output: { args: output.args },
        })
        const blocked = (why) =>
          new Error(
            `ctxward: the dispatch guard could not check this ${input.tool} call, so it is ` +
              `blocked (the guard fails closed): ${why}`,
          )
        if (result.missing) throw new Error(missingLine(`${input.tool} call`))
        if (!result.ok) throw blocked(result.why)
        const answer = result.answer
        const unknown = Object.keys(answer).filter((key) => !GUARD_KEYS.has(key))
        if (unknown.length) throw blocked(`unexpected answer ${unknown.join(", ")}`)
        if (typeof answer.notice === "string") log("warn", answer.notice)
        if (answer.deny !== undefined) throw new Error(String(answer.deny))
        if (answer.args !== undefined) {
          if (!answer.args || typeof answer.args !== "object") throw blocked("args is not an object")
          for (const [key, value] of Object.entries(answer.args)) output.args[key] = value
        }
        if (typeof answer.note === "string" && answer.note) notes.set(input.callID, answer.note)
      },

      "tool.execute.after": async (input, output) => {
        const exit = output?.metadata?.exit
        const failed = typeof exit === "number" && exit !== 0 // the bash tool's exit code
        observe(
          failed ? "post-tool-use-failure" : "post-tool-use",
          "tool.execute.after",
          input?.sessionID,
          { tool: input?.tool, sessionID: input?.sessionID, callID: input?.callID, args: input?.args ?? {} },
          { failed },
        )
        const note = notes.get(input.callID)
        if (note === undefined) return
        notes.delete(input.callID)
        if (typeof output?.output === "string") output.output += `\n\n${note}`
      },

      "experimental.session.compacting": async (input, output) => {
        compacting.add(input?.sessionID) // its system transform is the summarizer's: no drift notes
        const result = await call("pre-compact", "experimental.session.compacting", input, {})
        if (!result.ok) {
          failed(result, "error", `ctxward: pre-compact (compaction goes on without it): ${result.why}`)
          return
        }
        const texts = strings(result.answer.context)
        // OpenCode ignores output.context once a plugin has replaced the whole prompt.
        if (typeof output.prompt === "string") output.prompt += texts.map((t) => `\n\n${t}`).join("")
        else output.context.push(...texts)
        if (typeof result.answer.notice === "string") log("info", result.answer.notice)
      },

      "experimental.chat.system.transform": async (input, output) => {
        const sessionID = input?.sessionID
        if (!sessionID) return // agent generation, not a session's request
        if (!compacting.has(sessionID)) {
          const checking = afterCompacting.get(sessionID)
          if (checking) await checking // the post-compact call, bounded by its own timeout
          const once = restate.get(sessionID)
          if (once?.length) {
            restate.delete(sessionID)
            output.system.push(...once)
          }
          const running = observing.get(sessionID)
          if (running) await running // each observation is bounded by its own timeout
          const facts = driftNotes.get(sessionID)
          if (facts?.length) {
            driftNotes.delete(sessionID)
            output.system.push(...facts)
          }
        }
        const source = compacted.has(sessionID)
          ? "compact"
          : created.has(sessionID)
            ? "startup"
            : "resume"
        // After a compaction (or on resume) the answer is the session's own: the rules its
        // summary lacks (ctxward's ledger of the session is one of the watched files).
        const cacheKey = source === "startup" ? source : `${source}:${sessionID}`
        let answer = systemAnswers.get(cacheKey)
        if (!answer || fingerprint(answer.watch) !== answer.key) {
          const result = await call(
            "session-start",
            "experimental.chat.system.transform",
            { sessionID },
            { plugin: { source } },
            SYSTEM_TIMEOUT_MS,
          )
          if (!result.ok) {
            failed(result, "error", `ctxward: session-start (no invariants in this request): ${result.why}`)
            return
          }
          const watch = strings(result.answer.watch)
          answer = { system: strings(result.answer.system), watch, key: fingerprint(watch) }
          if (systemAnswers.size >= MAX_REMEMBERED) systemAnswers.clear()
          if (watch.length) systemAnswers.set(cacheKey, answer)
          if (typeof result.answer.notice === "string") log("info", result.answer.notice)
        }
        output.system.push(...answer.system)
      },

      "experimental.text.complete": async (input) => {
        if (input?.sessionID) quiet.set(input.sessionID, 0) // the model wrote text: not silent
      },

      "experimental.compaction.autocontinue": async (input) => {
        autoCompacting.add(input.sessionID) // fired only after an automatic compaction
      },

      event: async ({ event }) => {
        try {
          if (event?.type === "session.created") {
            created.add(event.properties?.sessionID ?? event.properties?.info?.id)
          } else if (event?.type === "session.compacted") {
            const sessionID = event.properties?.sessionID
            compacted.add(sessionID)
            compacting.delete(sessionID)
            const work = afterCompaction(event).catch((error) =>
              log("warn", `ctxward: post-compact: ${error?.message ?? error}`),
            )
            if (sessionID) afterCompacting.set(sessionID, work)
            track(work).finally(() => {
              if (afterCompacting.get(sessionID) === work) afterCompacting.delete(sessionID)
            })
          } else if (event?.type === "message.part.updated") {
            // A tool that threw never reaches tool.execute.after: its part turns to "error".
            const part = event.properties?.part
            if (part?.type !== "tool" || part.state?.status !== "error" || !part.callID) return
            if (failedParts.has(part.callID)) return
            if (failedParts.size >= MAX_REMEMBERED) failedParts.clear()
            failedParts.add(part.callID)
            const failure = {
              tool: part.tool,
              sessionID: part.sessionID,
              callID: part.callID,
              state: { status: "error", input: part.state.input ?? {} },
            }
            observe(
              "post-tool-use-failure",
              "event",
              part.sessionID,
              { event: { type: event.type, properties: { part: failure } } },
              {},
            )
          }
        } catch (error) {
          log("warn", `ctxward: event ${event?.type}: ${error?.message ?? error}`)
        }
      },

      dispose: async () => {
        await Promise.allSettled([...pending]) // each is bounded by its own timeout
      },
    }
  },
}

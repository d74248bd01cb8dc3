#!/usr/bin/env -S node --max-semi-space-size=8
// The one `oracle-node` binary: every workload (operator, coordinator, worker, gateway, start) and tool
// (validate, derive, schema, status, logs, cycle) is a subcommand, so all pods run the same image.
// The young generation is capped at 8 MiB per semi-space (V8 grows it to 32 MiB by default): `validate` of a
// 5 MiB config then peaks near 130 MiB RSS instead of 180 MiB at the same CPU time (docs/benchmarks.md).
// require-node is the only static import: every static import is linked before any code runs, so one that an old
// Node.js cannot link (zod-english-only's `registerHooks`, Node.js 22.15) would end it with a SyntaxError and a
// stack trace before the version check. Everything else is imported once the version is known to be supported.
import './require-node.js';

// Before any module reads the time zone.
await import('./timezone.js');
const { redactStandardStreams } = await import('./redacted-streams.js');
redactStandardStreams();
(await import('./closed-pipe.js')).endQuietlyOnClosedPipe();
// Before any module that loads zod is resolved.
(await import('./zod-english-only.js')).loadEnglishZodLocaleOnly();
const { runCli } = await import('./main.js');

process.exitCode = await runCli(process.argv.slice(2));

#!/usr/bin/env -S node --max-semi-space-size=8
// The one `oracle-node` binary: every workload (operator, coordinator, worker, gateway, start) and tool
// (validate, derive, schema, status, logs, cycle) is a subcommand, so all pods run the same image.
// The young generation is capped at 8 MiB per semi-space (V8 grows it to 32 MiB by default): `validate` of a
// 5 MiB config then peaks near 130 MiB RSS instead of 180 MiB at the same CPU time (docs/benchmarks.md).
// require-node comes first: it refuses an old Node.js before anything else is evaluated.
import './require-node.js';
import './timezone.js';
import { runCli } from './main.js';
import { redactStandardStreams } from './redacted-streams.js';
import { loadEnglishZodLocaleOnly } from './validate-startup.js';

redactStandardStreams();
// Before the validate command's modules, which load zod, are resolved.
if (process.argv[2] === 'validate') loadEnglishZodLocaleOnly();

process.exitCode = await runCli(process.argv.slice(2));

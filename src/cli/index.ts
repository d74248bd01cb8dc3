#!/usr/bin/env -S node --max-semi-space-size=8
// The one `oracle-node` binary: every workload (operator, coordinator, worker, gateway, start) and tool
// (validate, derive, schema) is a subcommand, so all pods run the same image.
// The young generation is capped at 8 MiB per semi-space (V8 grows it to 32 MiB by default): `validate` of a
// 5 MiB config then peaks near 130 MiB RSS instead of 180 MiB at the same CPU time (docs/benchmarks.md).
import './timezone.js';
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));

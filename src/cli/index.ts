#!/usr/bin/env node
// The one `oracle-node` binary: every workload (operator, coordinator, worker, gateway, start) and tool
// (validate, derive, schema, status, logs, cycle) is a subcommand, so all pods run the same image.
// require-node comes first: it refuses an old Node.js before anything else is evaluated.
import './require-node.js';
import './timezone.js';
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));

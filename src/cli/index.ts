#!/usr/bin/env node
// The one `oracle-node` binary: every workload (operator, coordinator, worker, gateway, start) and tool
// (validate, derive, schema) is a subcommand, so all pods run the same image.
import './timezone.js';
import { redactStandardStreams, runCli } from './main.js';

redactStandardStreams();

process.exitCode = await runCli(process.argv.slice(2));

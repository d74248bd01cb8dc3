// Every oracle-node process runs in UTC. Pre- and post-processing snippets see the host's time zone through
// Date's local-time methods (as in the reference, whose snippets run in node's vm), so an answer such as "the
// API's date for this timestamp" would otherwise depend on where the node runs. The reference's own deployments
// (Lambda, Cloud Functions, its container image) run in UTC, so UTC also keeps answers identical to theirs.
// Imported first by the binary's entry, before any module reads the time zone.
process.env['TZ'] = 'UTC';

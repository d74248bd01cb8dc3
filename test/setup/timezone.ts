// In-process tests run the engine as the binary does: in UTC (src/cli/timezone.ts), whatever the machine's TZ.
import '../../src/cli/timezone.js';

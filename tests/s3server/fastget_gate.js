// tests/s3server/fastget_gate.js: the latency gate of the bench's fast GET
// front (tests/s3server/fastget.sh), run inside nginx by its JavaScript
// module (njs).  A GET or HEAD that nginx serves while the test server's
// latency is on comes here first: it waits the milliseconds the flag file
// holds (the test server writes them there, see server.js, "latency") on
// a timer of nginx's own event loop, then goes on to @object, which
// serves the bytes.  No request reaches Node.js for it: a LIST that keeps
// s3rver's one thread busy for a quarter of a second no longer holds up
// every GET behind it, as S3's GETs are not held up by its LISTs.
import fs from 'fs';

function wait(r) {
	let ms = 0;
	try {
		ms = parseInt(fs.readFileSync(r.variables.fastget_flag), 10) || 0;
	} catch (e) {
		ms = 0; // (no flag: the latency went off meanwhile)
	}
	setTimeout(() => r.internalRedirect('@object'), ms);
}

export default { wait };

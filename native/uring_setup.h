/* Setting up an io_uring for a connection, for the servers that send through one (they link with
 * -luring; this header is included by them only, so the other servers never need liburing).
 *
 * A ring that cannot be made is a per-connection failure with one line saying why, in the words an
 * operator can act on: io_uring disabled by the sysctl kernel.io_uring_disabled (EPERM), a kernel
 * without io_uring (ENOSYS), an operation this kernel does not know (checked with a probe).
 */
#ifndef COPYLAB_URING_SETUP_H
#define COPYLAB_URING_SETUP_H

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>

#include "server_common.h"

#define URING_DISABLED_SYSCTL "/proc/sys/kernel/io_uring_disabled"

/* Why io_uring_setup() failed with err, beyond strerror(): "" when there is nothing to add. */
static inline const char *uring_setup_hint(int err)
{
	int disabled = 0;
	FILE *f;

	if (err == ENOSYS)
		return " (this kernel has no io_uring: CONFIG_IO_URING is off)";
	if (err == ENOMEM)
		return " (locked memory: raise RLIMIT_MEMLOCK or run with CAP_IPC_LOCK)";
	if (err != EPERM)
		return "";
	f = fopen(URING_DISABLED_SYSCTL, "r");
	if (!f || fscanf(f, "%d", &disabled) != 1)
		disabled = -1;
	if (f)
		fclose(f);
	if (disabled == 2)
		return " (kernel.io_uring_disabled=2: io_uring is disabled on this host)";
	if (disabled == 1)
		return " (kernel.io_uring_disabled=1: only members of kernel.io_uring_group may use io_uring)";
	return " (refused by a security policy: seccomp or an LSM)";
}

/* io_uring_queue_init() with entries, or -1 after conn_fail() saying why. */
static inline int uring_queue_init(struct conn *c, struct io_uring *ring, unsigned entries)
{
	int rc = io_uring_queue_init(entries, ring, 0);

	if (rc < 0) {
		conn_fail(c, "io_uring_queue_init: %s%s", strerror(-rc), uring_setup_hint(-rc));
		return -1;
	}
	return 0;
}

/* Does this kernel know opcode? 0, or -1 after conn_fail() naming it (what = its name). */
static inline int uring_require_op(struct conn *c, struct io_uring *ring, int opcode, const char *what,
				   const char *since)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
	int ok = probe && io_uring_opcode_supported(probe, opcode);

	if (probe)
		io_uring_free_probe(probe);
	if (!ok) {
		conn_fail(c, "io_uring: this kernel does not support %s (Linux %s and later)", what, since);
		return -1;
	}
	return 0;
}

#endif

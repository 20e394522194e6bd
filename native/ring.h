/* The distinct messages a connection cycles through: its working set, the same for every sender.
 *
 * A sender that resent one message would read it from a warm cache every time, while a zero-copy
 * sender must rotate through several (a buffer in flight may not be reused): their costs would not
 * be comparable. So every server sends message k of a ring of n, n from --working-set, and
 * ring_messages() gives every implementation the same n for the same message size and connection
 * count, whatever its own layout (it counts the page-aligned layout, the largest).
 *
 * Memory is bounded per connection (RING_MEMORY_MAX) and for the whole process (RING_BUDGET, an
 * atomic count of reserved bytes): a connection gets the ring it asks for if that fits in what is
 * left of the budget, else as many messages as fit, and never fewer than RING_MESSAGES_MIN, even
 * past the budget (a client that was accepted is served; a small ring only lowers that
 * connection's working set). A ring keeps its size for the life of the connection. With one or a
 * few connections nothing is cut: a whole ring fits.
 *
 * --ring-memory raises the bound per connection (a working set placed beyond the last-level cache
 * must be held exactly, not cut to 8 MiB: params.py, cachelevels.py) and the process budget with it
 * (the same number of connections' worth); the caller has checked the host can give it. */
#ifndef COPYLAB_RING_H
#define COPYLAB_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "message.h"

struct ring_slot {
	struct message msg;
	struct iovec iov[MESSAGE_FIELDS]; /* over msg's fields, built once */
	/* for senders whose buffers stay in flight after the call (zero-copy): the ids
	 * [first_id, end_id) of the calls that sent this slot last, and how many have not completed */
	uint64_t first_id, end_id;
	uint64_t pending;
};

struct ring {
	struct ring_slot *slot;
	unsigned n;
	unsigned next;
	size_t reserved; /* bytes of RING_BUDGET this ring holds, returned by ring_free() */
};

/* Raise the bound per connection to per_connection bytes (at least RING_MEMORY_MAX) and the
 * process budget in proportion; called once, before any ring exists. */
void ring_set_memory(size_t per_connection);
/* The process budget for all rings in force. */
size_t ring_budget(void);
/* How many distinct messages a connection wants for working_set bytes of msg_size-byte messages,
 * before the process budget: at least RING_MESSAGES_MIN, within RING_MEMORY_MAX. */
unsigned ring_messages(size_t msg_size, size_t working_set);
/* What a connection's ring holds at least (RING_MESSAGES_MIN messages), granted even past the
 * process budget: the memory each further connection costs. */
size_t ring_min_bytes(size_t msg_size);
/* Reserve budget and allocate the ring (fields aligned to align bytes, or malloc'd when 0), each
 * message filled with the pattern. 0, or -1 with errno set and nothing held. */
int ring_init(struct ring *r, size_t msg_size, size_t working_set, size_t align);
/* Free the messages and return the reservation (safe on a zeroed or failed ring). */
void ring_free(struct ring *r);
/* The slot to send next; the ring moves on. */
struct ring_slot *ring_next(struct ring *r);

#endif

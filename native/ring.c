#include "ring.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limits.h"

/* Bytes of RING_BUDGET reserved by live rings (may exceed it: the minimum is always granted). */
static atomic_size_t budget_used;
/* the bounds in force: limits.h's, or raised by ring_set_memory() */
static size_t memory_max = RING_MEMORY_MAX;
static size_t budget = RING_BUDGET;

void ring_set_memory(size_t per_connection)
{
	if (per_connection <= RING_MEMORY_MAX)
		return;
	memory_max = per_connection;
	budget = per_connection / RING_MEMORY_MAX * RING_BUDGET; /* as many connections' worth */
}

size_t ring_budget(void)
{
	return budget;
}

static size_t page_size(void)
{
	long page = sysconf(_SC_PAGESIZE);
	return page > 0 ? (size_t)page : 4096;
}

/* What one message holds in whole pages per field (the page-aligned layout). */
static size_t paged_message(size_t msg_size, size_t page)
{
	size_t bytes = 0;

	for (int k = 0; k < MESSAGE_FIELDS; k++)
		bytes += (message_field_len(msg_size, k) + page - 1) / page * page;
	return bytes;
}

/* What one message costs in resident memory, for the process budget. posix_memalign puts the chunk
 * header (two words) just before each page-aligned field, so a field of whole pages spills into one
 * more page, and the gap left before the alignment is not reused by the next field of the same size.
 * Checked against the server's RSS: 64 KiB messages take 96 KiB per slot, 1 MiB ones 1056 KiB. */
static size_t slot_cost(size_t msg_size, size_t page)
{
	size_t cost = 0;

	for (int k = 0; k < MESSAGE_FIELDS; k++)
		cost += (message_field_len(msg_size, k) + 2 * sizeof(size_t) + page - 1) / page * page;
	return cost;
}

unsigned ring_messages(size_t msg_size, size_t working_set)
{
	size_t want = (working_set + msg_size - 1) / msg_size;
	size_t fit = memory_max / paged_message(msg_size, page_size());
	size_t n = want < fit ? want : fit;

	return n < RING_MESSAGES_MIN ? RING_MESSAGES_MIN : (unsigned)n;
}

size_t ring_min_bytes(size_t msg_size)
{
	return RING_MESSAGES_MIN * slot_cost(msg_size, page_size());
}

/* As many of want messages of cost bytes as fit in what is left of the budget, never fewer than
 * RING_MESSAGES_MIN; the caller holds n * cost bytes until budget_release(). */
static unsigned budget_reserve(unsigned want, size_t cost)
{
	size_t used = atomic_load_explicit(&budget_used, memory_order_relaxed);
	unsigned n;

	do {
		size_t left = used < budget ? budget - used : 0;
		size_t fit = left / cost;
		n = fit < want ? (unsigned)fit : want;
		if (n < RING_MESSAGES_MIN)
			n = RING_MESSAGES_MIN;
		/* on failure used is reloaded: another connection reserved or released meanwhile */
	} while (!atomic_compare_exchange_weak_explicit(&budget_used, &used, used + (size_t)n * cost,
							memory_order_relaxed, memory_order_relaxed));
	return n;
}

int ring_init(struct ring *r, size_t msg_size, size_t working_set, size_t align)
{
	size_t cost = slot_cost(msg_size, page_size());
	unsigned granted = budget_reserve(ring_messages(msg_size, working_set), cost);

	memset(r, 0, sizeof(*r));
	r->reserved = (size_t)granted * cost; /* from here on ring_free() returns it */
	if (!(r->slot = calloc(granted, sizeof(*r->slot)))) {
		ring_free(r);
		errno = ENOMEM;
		return -1;
	}
	for (; r->n < granted; r->n++) {
		struct ring_slot *sl = &r->slot[r->n];
		if (message_alloc(&sl->msg, msg_size, align) < 0) {
			int saved = errno;
			ring_free(r);
			errno = saved;
			return -1;
		}
		message_iovec(&sl->msg, sl->iov);
	}
	return 0;
}

void ring_free(struct ring *r)
{
	for (unsigned k = 0; k < r->n; k++)
		message_free(&r->slot[k].msg);
	free(r->slot);
	atomic_fetch_sub_explicit(&budget_used, r->reserved, memory_order_relaxed);
	memset(r, 0, sizeof(*r));
}

struct ring_slot *ring_next(struct ring *r)
{
	struct ring_slot *sl = &r->slot[r->next];

	r->next = r->next + 1 == r->n ? 0 : r->next + 1;
	return sl;
}

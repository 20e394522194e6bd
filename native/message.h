/* The 8-field heap message the servers send, and the pattern the client checks it against.
 *
 * Byte i of every message (counted from the start of field 0) is pattern_byte(i): a hash of i,
 * not periodic, so a stream that slips by any number of bytes no longer matches.
 */
#ifndef COPYLAB_MESSAGE_H
#define COPYLAB_MESSAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "limits.h"

#define MESSAGE_FIELDS 8

struct message {
	char *field[MESSAGE_FIELDS];
	size_t len[MESSAGE_FIELDS];
};

/* Allocate the 8 fields (total bytes split evenly, remainder to the first fields), each its own
 * allocation: malloc when align is 0, else posix_memalign(align). Fields are filled with the
 * pattern. Returns 0, or -1 with errno set (nothing left allocated). */
int message_alloc(struct message *m, size_t total, size_t align);
void message_free(struct message *m);
/* Length of field k of a total-byte message. */
size_t message_field_len(size_t total, int k);
size_t message_total(const struct message *m);

/* iov[k] covers field k. */
void message_iovec(const struct message *m, struct iovec iov[MESSAGE_FIELDS]);
/* Copy the fields back to back into dst (message_total bytes): A1's user-space copy. */
void message_serialize(const struct message *m, char *dst);

uint8_t pattern_byte(uint64_t offset);
/* dst[k] = pattern_byte(offset + k) */
void pattern_fill(char *dst, uint64_t offset, size_t len);

/* Checks a received byte stream of back-to-back messages against the pattern, across message
 * boundaries and however the stream is chunked. full: every byte; otherwise the first, middle
 * and last 8 bytes of each message (still catches any framing slip). */
struct stream_check {
	const char *expected; /* one whole message of pattern, msg_size bytes */
	size_t msg_size;
	size_t pos;           /* offset inside the current message */
	int full;
	size_t window[3];     /* sampled mode: starts of the 8-byte windows, deduplicated */
	int nwindows;
	int failed;
	uint64_t stream_offset;      /* bytes fed so far */
	uint64_t first_bad_offset;   /* stream offset of the first mismatching byte seen */
};

void stream_check_init(struct stream_check *sc, const char *expected, size_t msg_size, int full);
/* Feed len received bytes; returns how many messages completed within them. */
size_t stream_check_feed(struct stream_check *sc, const char *data, size_t len);
/* Account len bytes that were received but never seen (discarded by the kernel): the framing
 * moves on, nothing is compared. Returns how many messages completed within them. */
size_t stream_check_skip(struct stream_check *sc, size_t len);

#endif

#include "message.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_BYTES 8

/* splitmix64 finaliser: a cheap, well-mixed hash, so the pattern has no period. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint8_t pattern_byte(uint64_t offset)
{
	return (uint8_t)(mix64(offset >> 3) >> ((offset & 7) * 8));
}

void pattern_fill(char *dst, uint64_t offset, size_t len)
{
	size_t k = 0;
	/* byte-wise up to a word boundary of the offset, then one hash per 8 bytes */
	while (k < len && ((offset + k) & 7) != 0) {
		dst[k] = (char)pattern_byte(offset + k);
		k++;
	}
	while (len - k >= 8) {
		uint64_t w = mix64((offset + k) >> 3);
		for (int b = 0; b < 8; b++)
			dst[k + b] = (char)(uint8_t)(w >> (b * 8));
		k += 8;
	}
	while (k < len) {
		dst[k] = (char)pattern_byte(offset + k);
		k++;
	}
}

size_t message_field_len(size_t total, int k)
{
	return total / MESSAGE_FIELDS + ((size_t)k < total % MESSAGE_FIELDS ? 1 : 0);
}

int message_alloc(struct message *m, size_t total, size_t align)
{
	size_t offset = 0;

	memset(m, 0, sizeof(*m));
	for (int k = 0; k < MESSAGE_FIELDS; k++) {
		size_t len = message_field_len(total, k);
		void *p = NULL;

		if (align) {
			int rc = posix_memalign(&p, align, len);
			if (rc != 0) {
				p = NULL;
				errno = rc;
			}
		} else {
			p = malloc(len);
		}
		if (!p) {
			int saved = errno;
			message_free(m);
			errno = saved;
			return -1;
		}
		m->field[k] = p;
		m->len[k] = len;
		pattern_fill(p, offset, len);
		offset += len;
	}
	return 0;
}

void message_free(struct message *m)
{
	for (int k = 0; k < MESSAGE_FIELDS; k++) {
		free(m->field[k]);
		m->field[k] = NULL;
		m->len[k] = 0;
	}
}

size_t message_total(const struct message *m)
{
	size_t total = 0;
	for (int k = 0; k < MESSAGE_FIELDS; k++)
		total += m->len[k];
	return total;
}

void message_iovec(const struct message *m, struct iovec iov[MESSAGE_FIELDS])
{
	for (int k = 0; k < MESSAGE_FIELDS; k++) {
		iov[k].iov_base = m->field[k];
		iov[k].iov_len = m->len[k];
	}
}

void message_serialize(const struct message *m, char *dst)
{
	for (int k = 0; k < MESSAGE_FIELDS; k++) {
		memcpy(dst, m->field[k], m->len[k]);
		dst += m->len[k];
	}
}

void stream_check_init(struct stream_check *sc, const char *expected, size_t msg_size, int full)
{
	size_t starts[3] = {0, (msg_size / 2) & ~(size_t)(SAMPLE_BYTES - 1), msg_size - SAMPLE_BYTES};

	memset(sc, 0, sizeof(*sc));
	sc->expected = expected;
	sc->msg_size = msg_size;
	sc->full = full;
	for (int k = 0; k < 3; k++) {
		int dup = 0;
		for (int j = 0; j < sc->nwindows; j++)
			dup |= sc->window[j] == starts[k];
		if (!dup)
			sc->window[sc->nwindows++] = starts[k];
	}
}

/* Index in a of the first byte that differs from b, or -1 (memcmp first: the common case is equal). */
static long first_difference(const char *a, const char *b, size_t n)
{
	if (memcmp(a, b, n) == 0)
		return -1;
	size_t k = 0;
	while (a[k] == b[k])
		k++;
	return (long)k;
}

/* Compare data (n bytes, at message offset pos) with the pattern: all of it, or in sampled mode
 * the parts of the windows inside [pos, pos + n). Returns the index in data of the first
 * mismatch, or -1. */
static long first_mismatch(const struct stream_check *sc, const char *data, size_t pos, size_t n)
{
	if (sc->full)
		return first_difference(data, sc->expected + pos, n);
	for (int k = 0; k < sc->nwindows; k++) {
		size_t lo = sc->window[k], hi = lo + SAMPLE_BYTES;
		if (lo < pos)
			lo = pos;
		if (hi > pos + n)
			hi = pos + n;
		if (lo < hi) {
			long d = first_difference(data + (lo - pos), sc->expected + lo, hi - lo);
			if (d >= 0)
				return (long)(lo - pos) + d;
		}
	}
	return -1;
}

size_t stream_check_feed(struct stream_check *sc, const char *data, size_t len)
{
	size_t completed = 0;

	while (len > 0) {
		size_t n = sc->msg_size - sc->pos;
		if (n > len)
			n = len;
		if (!sc->failed) {
			long bad = first_mismatch(sc, data, sc->pos, n);
			if (bad >= 0) {
				sc->failed = 1;
				sc->first_bad_offset = sc->stream_offset + (uint64_t)bad;
			}
		}
		sc->pos += n;
		sc->stream_offset += n;
		if (sc->pos == sc->msg_size) {
			sc->pos = 0;
			completed++;
		}
		data += n;
		len -= n;
	}
	return completed;
}

size_t stream_check_skip(struct stream_check *sc, size_t len)
{
	size_t completed = 0;

	sc->stream_offset += len;
	if (len < sc->msg_size - sc->pos) {
		sc->pos += len;
		return 0;
	}
	len -= sc->msg_size - sc->pos;
	completed = 1 + len / sc->msg_size;
	sc->pos = len % sc->msg_size;
	return completed;
}

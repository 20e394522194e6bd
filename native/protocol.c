#include "protocol.h"

#include <inttypes.h>
#include <stdio.h>

static void put_be16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

void put_be64(unsigned char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint16_t get_be16(const unsigned char *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get_be32(const unsigned char *p)
{
	return ((uint32_t)get_be16(p) << 16) | get_be16(p + 2);
}

uint64_t get_be64(const unsigned char *p)
{
	return ((uint64_t)get_be32(p) << 32) | get_be32(p + 4);
}

void hello_encode(const struct hello *h, unsigned char out[HELLO_SIZE])
{
	put_be32(out, h->magic);
	put_be16(out + 4, h->version);
	put_be16(out + 6, h->mode);
	put_be64(out + 8, h->msg_size);
}

void hello_decode(const unsigned char in[HELLO_SIZE], struct hello *h)
{
	h->magic = get_be32(in);
	h->version = get_be16(in + 4);
	h->mode = get_be16(in + 6);
	h->msg_size = get_be64(in + 8);
}

void reply_encode(const struct reply *r, unsigned char out[REPLY_SIZE])
{
	put_be32(out, r->magic);
	put_be16(out + 4, r->status);
	put_be16(out + 6, r->impl);
	put_be16(out + 8, r->mode);
	put_be16(out + 10, r->version);
	put_be32(out + 12, r->limit);
	put_be64(out + 16, r->msg_size);
}

void reply_decode(const unsigned char in[REPLY_SIZE], struct reply *r)
{
	r->magic = get_be32(in);
	r->status = get_be16(in + 4);
	r->impl = get_be16(in + 6);
	r->mode = get_be16(in + 8);
	r->version = get_be16(in + 10);
	r->limit = get_be32(in + 12);
	r->msg_size = get_be64(in + 16);
}

const char *mode_name(int mode)
{
	switch (mode) {
	case MODE_THROUGHPUT: return "throughput";
	case MODE_LATENCY: return "latency";
	default: return "?";
	}
}

void describe_refusal(const struct hello *asked, const struct reply *r, char *buf, size_t len)
{
	switch (r->status) {
	case STATUS_MODE_MISMATCH:
		snprintf(buf, len, "the server runs --mode %s, the client asked for --mode %s",
			 mode_name(r->mode), mode_name(asked->mode));
		break;
	case STATUS_SIZE_MISMATCH:
		snprintf(buf, len, "the server runs --msg-size %" PRIu64 ", the client asked for --msg-size %" PRIu64,
			 r->msg_size, asked->msg_size);
		break;
	case STATUS_BAD_HELLO:
		snprintf(buf, len, "the server did not understand the handshake (protocol version %u expected)",
			 (unsigned)r->version);
		break;
	case STATUS_SERVER_ERROR:
		snprintf(buf, len, "the server could not set the connection up (see the server's stderr)");
		break;
	case STATUS_BUSY:
		snprintf(buf, len, "the server already serves %u connections, the most it takes at once "
			 "(docs/reliability.md, \"Connection cap\")", (unsigned)r->limit);
		break;
	default:
		snprintf(buf, len, "unknown refusal status %u", (unsigned)r->status);
	}
}

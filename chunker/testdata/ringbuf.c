/*
 * ringbuf.c - a fixed-size byte ring buffer.
 */
#include <stdlib.h>
#include <string.h>
#include "ringbuf.h"

#define RB_MIN_CAPACITY 16

struct ringbuf {
	unsigned char *data;
	size_t cap;
	size_t head; /* next byte to read */
	size_t len;
};

typedef enum { RB_OK = 0, RB_FULL = -1, RB_EMPTY = -2 } rb_status;

/* Allocates a ring buffer holding at least cap bytes. Returns NULL on failure. */
struct ringbuf *rb_new(size_t cap)
{
	struct ringbuf *rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	if (cap < RB_MIN_CAPACITY)
		cap = RB_MIN_CAPACITY;
	rb->data = malloc(cap);
	if (!rb->data) {
		free(rb);
		return NULL;
	}
	rb->cap = cap;
	return rb;
}

/* Frees the buffer and its storage. */
void rb_free(struct ringbuf *rb)
{
	if (rb) {
		free(rb->data);
		free(rb);
	}
}

/*
 * Writes up to n bytes from src and returns how many were written.
 * Never overwrites unread data.
 */
size_t rb_write(struct ringbuf *rb, const void *src, size_t n)
{
	const unsigned char *p = src;
	size_t free_space = rb->cap - rb->len;
	if (n > free_space)
		n = free_space;
	for (size_t i = 0; i < n; i++) {
		size_t tail = (rb->head + rb->len) % rb->cap;
		rb->data[tail] = p[i];
		rb->len++;
	}
	return n;
}

/* Reads up to n bytes into dst and returns how many were read. */
size_t rb_read(struct ringbuf *rb, void *dst, size_t n)
{
	unsigned char *p = dst;
	if (n > rb->len)
		n = rb->len;
	for (size_t i = 0; i < n; i++) {
		p[i] = rb->data[rb->head];
		rb->head = (rb->head + 1) % rb->cap;
	}
	rb->len -= n;
	return n;
}

static int rb_empty(const struct ringbuf *rb) { return rb->len == 0; }

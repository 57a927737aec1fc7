import { EventEmitter } from "events";

/** Options for an LRU cache. */
export interface CacheOptions {
  /** Maximum number of entries kept. */
  capacity: number;
  /** Entry lifetime in milliseconds (0: forever). */
  ttlMs?: number;
}

export type Loader<V> = (key: string) => Promise<V>;

enum EvictionReason {
  Capacity = "capacity",
  Expired = "expired",
}

interface Entry<V> {
  value: V;
  expires: number;
}

/**
 * A least-recently-used cache with optional expiry and a loader for misses.
 */
export class LRUCache<V> extends EventEmitter {
  private readonly entries = new Map<string, Entry<V>>();
  private hits = 0;
  private misses = 0;

  constructor(private readonly opts: CacheOptions, private readonly loader?: Loader<V>) {
    super();
    if (opts.capacity <= 0) {
      throw new RangeError(`capacity must be positive: ${opts.capacity}`);
    }
  }

  /** Returns the cached value, loading it on a miss when a loader is set. */
  async get(key: string): Promise<V | undefined> {
    const e = this.entries.get(key);
    if (e && (e.expires === 0 || e.expires > Date.now())) {
      this.entries.delete(key);
      this.entries.set(key, e);
      this.hits++;
      return e.value;
    }
    if (e) this.evict(key, EvictionReason.Expired);
    this.misses++;
    if (!this.loader) return undefined;
    const value = await this.loader(key);
    this.set(key, value);
    return value;
  }

  /** Stores a value, evicting the least recently used entry when full. */
  set(key: string, value: V): void {
    const ttl = this.opts.ttlMs ?? 0;
    this.entries.delete(key);
    this.entries.set(key, { value, expires: ttl ? Date.now() + ttl : 0 });
    while (this.entries.size > this.opts.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.evict(oldest, EvictionReason.Capacity);
    }
  }

  private evict(key: string, reason: EvictionReason): void {
    this.entries.delete(key);
    this.emit("evict", key, reason);
  }

  get stats(): { hits: number; misses: number } {
    return { hits: this.hits, misses: this.misses };
  }
}

/** Memoizes an async function with an LRU cache. */
export function memoize<V>(fn: Loader<V>, capacity = 100): Loader<V> {
  const cache = new LRUCache<V>({ capacity }, fn);
  return async (key) => (await cache.get(key)) as V;
}

'use strict';

const http = require('http');
const { URL } = require('url');

/**
 * Compile a route pattern like "/users/:id" into a matcher.
 * @param {string} pattern
 * @returns {(path: string) => object|null}
 */
function compile(pattern) {
  const keys = [];
  const source = pattern
    .split('/')
    .map((part) => {
      if (part.startsWith(':')) {
        keys.push(part.slice(1));
        return '([^/]+)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  const re = new RegExp(`^${source}$`);
  return (path) => {
    const m = re.exec(path);
    if (!m) return null;
    const params = {};
    keys.forEach((k, i) => { params[k] = decodeURIComponent(m[i + 1]); });
    return params;
  };
}

/** A tiny HTTP router with middleware. */
class Router {
  constructor() {
    this.routes = [];
    this.middleware = [];
  }

  /** Register middleware run before every handler. */
  use(fn) {
    this.middleware.push(fn);
    return this;
  }

  /** Add a handler for a method and path pattern. */
  add(method, pattern, handler) {
    this.routes.push({ method, match: compile(pattern), handler });
    return this;
  }

  // Dispatch a request to the first matching route.
  async handle(req, res) {
    const url = new URL(req.url, 'http://localhost');
    for (const mw of this.middleware) {
      if ((await mw(req, res)) === false) return;
    }
    for (const route of this.routes) {
      if (route.method !== req.method) continue;
      const params = route.match(url.pathname);
      if (params) {
        req.params = params;
        return route.handler(req, res);
      }
    }
    res.statusCode = 404;
    res.end('not found');
  }
}

const logger = async (req) => {
  console.log(new Date().toISOString(), req.method, req.url);
};

function listen(router, port = 8080) {
  return http.createServer((req, res) => router.handle(req, res)).listen(port);
}

module.exports = { Router, compile, listen, logger };

"""Lua scripts behind :class:`fsmemory.implementations.redis.RedisFileSystem`.

Every script runs atomically on the server, so the data key, the metadata hash and the
directory indexes can never disagree, whatever happens to the client in between.

Calling convention (all scripts):

- ``KEYS[1]`` is the tenant's version counter ``{prefix}:seq``. Every key a script touches
  starts with the same ``{prefix}`` hash tag, so they all live in one cluster slot.
- ``ARGV[1]`` is the key base ``{prefix}:``; ``ARGV[2]`` is the normalised path.
- The reply is a list whose first element is a status: ``OK`` (payload follows), or an
  error code (``ENOENT``, ``EISDIR``, ``ENOTDIR``, ``EEXIST``, ``ENOTEMPTY``, ``CONFLICT``,
  ``CHANGED``) that the Python side turns into an exception.

Key layout below the base ``B``:

- ``B d:<path>``  string: the file's bytes (native GETRANGE / APPEND / STRLEN).
- ``B m:<path>``  hash: ``version``, ``base`` (version of the last whole-file write),
  ``mtime``, ``created`` (epoch seconds as ``"<sec>.<usec>"``, server clock).
- ``B i:<dir>``   hash: immediate children of ``<dir>`` (root is the empty string),
  field = child name, value = ``f`` (file) or ``d`` (directory). The field ``""`` marks a
  directory created explicitly by mkdir; it keeps an empty directory alive. A directory
  that only exists because of its files vanishes with its last child.
- ``B seq``       integer: versions are drawn from it, so they increase monotonically and
  are never reused, even after a delete and re-create.
"""

from __future__ import annotations

__all__ = ["SCRIPTS"]

_PRELUDE = r"""
local B = ARGV[1]
local function dkey(p) return B .. 'd:' .. p end
local function mkey(p) return B .. 'm:' .. p end
local function ikey(p) return B .. 'i:' .. p end

local function split(p)
  local i = string.find(p, '/[^/]*$')
  if i then return string.sub(p, 1, i - 1), string.sub(p, i + 1) end
  return '', p
end

local function child(d, name)
  if d == '' then return name end
  return d .. '/' .. name
end

-- 'f', 'd' or false
local function kind(p)
  if p == '' then return 'd' end
  local d, name = split(p)
  return redis.call('HGET', ikey(d), name)
end

local function now()
  local t = redis.call('TIME')
  return t[1] .. '.' .. string.rep('0', 6 - string.len(t[2])) .. t[2]
end

-- nil when every ancestor of p is a directory or missing (and so can be created)
local function check_parents(p)
  local d = split(p)
  while d ~= '' do
    local k = kind(d)
    if k == 'd' then return nil end
    if k == 'f' then return 'ENOTDIR' end
    d = split(d)
  end
  return nil
end

-- enter p (type t) in its parent's index, and missing ancestors (implicit dirs) in theirs
local function link(p, t)
  while true do
    local d, name = split(p)
    redis.call('HSET', ikey(d), name, t)
    if d == '' then return end
    local gd, gname = split(d)
    if redis.call('HEXISTS', ikey(gd), gname) == 1 then return end
    p = d
    t = 'd'
  end
end

-- remove p from its parent's index; a parent left empty (and not explicit) goes too
local function unlink(p)
  while p ~= '' do
    local d, name = split(p)
    redis.call('HDEL', ikey(d), name)
    if d == '' or redis.call('EXISTS', ikey(d)) == 1 then return end
    p = d
  end
end

local function version_of(p)
  return tonumber(redis.call('HGET', mkey(p), 'version') or '0') or 0
end

local function stamp(p, created, whole)
  local v = redis.call('INCR', KEYS[1])
  local t = now()
  redis.call('HSET', mkey(p), 'version', v, 'mtime', t)
  if created then redis.call('HSET', mkey(p), 'created', t) end
  if whole then redis.call('HSET', mkey(p), 'base', v) end
  return v
end

-- mode: 'w' overwrite, 'x' create only, 'c' compare-and-swap on `expected`
local function put(p, data, mode, expected)
  local k = kind(p)
  if k == 'd' then return {'EISDIR'} end
  local cur = 0
  if k then cur = version_of(p) end
  if mode == 'x' and k then return {'EEXIST', cur} end
  if mode == 'c' and cur ~= expected then return {'CONFLICT', cur} end
  if not k then
    local e = check_parents(p)
    if e then return {e} end
  end
  redis.call('SET', dkey(p), data)
  local v = stamp(p, not k, true)
  if not k then link(p, 'f') end
  return {'OK', v}
end

local function file_stat(p)
  local m = redis.call('HMGET', mkey(p), 'version', 'mtime', 'created', 'base')
  return redis.call('STRLEN', dkey(p)), tonumber(m[1]) or 0, m[2] or '0', m[3] or '0',
    tonumber(m[4]) or 0
end
"""

# ARGV: B, path, data, mode, expected version
_WRITE = r"""
return put(ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]) or 0)
"""

# ARGV: B, path, data, line_safe ('1' or '')  -> OK, offset, version
# With line_safe, a file not ending in a newline (a torn last line) gets one first, so
# the appended data starts a fresh line; the returned offset is that of the data.
_APPEND = r"""
local p = ARGV[2]
local k = kind(p)
if k == 'd' then return {'EISDIR'} end
if not k then
  local e = check_parents(p)
  if e then return {e} end
  redis.call('SET', dkey(p), ARGV[3])
  local v = stamp(p, true, true)
  link(p, 'f')
  return {'OK', 0, v}
end
local off = redis.call('STRLEN', dkey(p))
if ARGV[4] == '1' and off > 0 and redis.call('GETRANGE', dkey(p), off - 1, off - 1) ~= '\n' then
  redis.call('APPEND', dkey(p), '\n')
  off = off + 1
end
redis.call('APPEND', dkey(p), ARGV[3])
return {'OK', off, stamp(p, false, false)}
"""

# ARGV: B, path, start|'', end|'', expected base|''  -> OK, data, version, size
_READ = r"""
local p = ARGV[2]
local k = kind(p)
if k == 'd' then return {'EISDIR'} end
if not k then return {'ENOENT'} end
local n, v, _, _, base = file_stat(p)
if ARGV[5] ~= '' and tonumber(ARGV[5]) ~= base then return {'CHANGED', base} end
if ARGV[3] == '' and ARGV[4] == '' then
  return {'OK', redis.call('GET', dkey(p)) or '', v, n}
end
local s, e = 0, n
if ARGV[3] ~= '' then s = tonumber(ARGV[3]) end
if ARGV[4] ~= '' then e = tonumber(ARGV[4]) end
if s < 0 then s = math.max(0, n + s) end
if e < 0 then e = math.max(0, n + e) end
if e > n then e = n end
if s >= e then return {'OK', '', v, n} end
return {'OK', redis.call('GETRANGE', dkey(p), s, e - 1), v, n}
"""

# ARGV: B, path  -> OK, 'd'  |  OK, 'f', size, version, mtime, created, base
_INFO = r"""
local p = ARGV[2]
local k = kind(p)
if k == 'd' then return {'OK', 'd'} end
if not k then return {'ENOENT'} end
local n, v, mt, ct, base = file_stat(p)
return {'OK', 'f', n, v, mt, ct, base}
"""

# ARGV: B, path, detail ('1'|'0')
#   a directory -> OK, then 6 items per child: name, type, size, version, mtime, created
#   a file      -> FILE, size, version, mtime, created
_LS = r"""
local p = ARGV[2]
local detail = ARGV[3] == '1'
local k = kind(p)
if not k then return {'ENOENT'} end
if k == 'f' then
  local n, v, mt, ct = file_stat(p)
  return {'FILE', n, v, mt, ct}
end
local out = {'OK'}
local h = redis.call('HGETALL', ikey(p))
for i = 1, #h, 2 do
  local name, t = h[i], h[i + 1]
  if name ~= '' then
    local n, v, mt, ct = 0, 0, '', ''
    if detail and t == 'f' then n, v, mt, ct = file_stat(child(p, name)) end
    out[#out + 1] = name
    out[#out + 1] = t
    out[#out + 1] = n
    out[#out + 1] = v
    out[#out + 1] = mt
    out[#out + 1] = ct
  end
end
return out
"""

# ARGV: B, path, parents ('1'|'0'), exist_ok ('1'|'0')
_MKDIR = r"""
local p = ARGV[2]
local parents = ARGV[3] == '1'
local exist_ok = ARGV[4] == '1'
if p == '' then
  if exist_ok then return {'OK'} end
  return {'EEXIST'}
end
local k = kind(p)
if k == 'f' then return {'EEXIST'} end
if k == 'd' then
  if not exist_ok then return {'EEXIST'} end
  redis.call('HSET', ikey(p), '', '.')
  return {'OK'}
end
local missing = {p}
local d = split(p)
while d ~= '' do
  local kd = kind(d)
  if kd == 'd' then break end
  if kd == 'f' then return {'ENOTDIR'} end
  if not parents then return {'ENOENT'} end
  missing[#missing + 1] = d
  d = split(d)
end
for _, m in ipairs(missing) do
  local md, mname = split(m)
  redis.call('HSET', ikey(m), '', '.')
  redis.call('HSET', ikey(md), mname, 'd')
end
return {'OK'}
"""

# ARGV: B, path
_RMDIR = r"""
local p = ARGV[2]
if p == '' then return {'OK'} end
local k = kind(p)
if not k then return {'ENOENT'} end
if k == 'f' then return {'ENOTDIR'} end
local n = redis.call('HLEN', ikey(p))
if redis.call('HEXISTS', ikey(p), '') == 1 then n = n - 1 end
if n > 0 then return {'ENOTEMPTY'} end
redis.call('DEL', ikey(p))
unlink(p)
return {'OK'}
"""

# ARGV: B, path
_RMFILE = r"""
local p = ARGV[2]
local k = kind(p)
if k == 'd' then return {'EISDIR'} end
if not k then return {'ENOENT'} end
redis.call('DEL', dkey(p), mkey(p))
unlink(p)
return {'OK'}
"""

# ARGV: B, path  -> OK, number of files removed. Removes a file or a whole tree.
_RMTREE = r"""
local p = ARGV[2]
local k = kind(p)
if not k then return {'ENOENT'} end
if k == 'f' then
  redis.call('DEL', dkey(p), mkey(p))
  unlink(p)
  return {'OK', 1}
end
local n = 0
local stack = {p}
while #stack > 0 do
  local d = table.remove(stack)
  local h = redis.call('HGETALL', ikey(d))
  for i = 1, #h, 2 do
    local name, t = h[i], h[i + 1]
    if name ~= '' then
      local c = child(d, name)
      if t == 'f' then
        redis.call('DEL', dkey(c), mkey(c))
        n = n + 1
      else
        stack[#stack + 1] = c
      end
    end
  end
  redis.call('DEL', ikey(d))
end
if p ~= '' then unlink(p) end
return {'OK', n}
"""

# ARGV: B, source, destination, mode ('w'|'x')  -> like WRITE; DIR when source is a dir
_COPY = r"""
local src = ARGV[2]
local k = kind(src)
if k == 'd' then return {'DIR'} end
if not k then return {'ENOENT'} end
return put(ARGV[3], redis.call('GET', dkey(src)) or '', ARGV[4], 0)
"""

SCRIPTS: dict[str, str] = {
    name: _PRELUDE + body
    for name, body in {
        "write": _WRITE,
        "append": _APPEND,
        "read": _READ,
        "info": _INFO,
        "ls": _LS,
        "mkdir": _MKDIR,
        "rmdir": _RMDIR,
        "rm_file": _RMFILE,
        "rmtree": _RMTREE,
        "copy": _COPY,
    }.items()
}
"""Lua source of each script, by name (prelude included)."""

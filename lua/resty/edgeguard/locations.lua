-- The one cache of locations: access{} option tables -> what they resolve
-- to, by content. nginx.conf's `access{ mode = "block" }` builds a new
-- table on every request, so the key is the table's content: a trie over
-- its (key, value) pairs in iteration order, a nested table (thresholds)
-- walked one level down and closed by END. A lookup allocates nothing;
-- nodes are made only for a content Rust accepted.

local pairs = pairs
local setmetatable = setmetatable
local type = type

local _M = {}
local mt = { __index = _M }

-- Locations are few (one per access{} in nginx.conf); more distinct option
-- tables than this means they are built per request with changing content,
-- which is misuse.
_M.MAX = 1024

local END = {}

-- The child of `node` under `key`: made when `make`, else nil when absent.
local function step(node, key, make)
    local child = node and node[key]
    if not child and make then
        child = {}
        node[key] = child
    end
    return child
end

-- The trie node of `opts`' content (see step() for `make`).
local function walk(node, opts, make)
    for k, v in pairs(opts) do
        node = step(node, k, make)
        if type(v) == "table" then
            for k2, v2 in pairs(v) do
                node = step(step(node, k2, make), v2, make)
            end
            node = step(node, END, make)
        else
            node = step(node, v, make)
        end
    end
    return node
end

--- An empty cache.
function _M.new()
    return setmetatable({ root = {}, n = 0 }, mt)
end

--- The location cached for a table of `opts`' content, or nil.
function _M.find(self, opts)
    local node = walk(self.root, opts, false)
    return node and node.location
end

--- Caches `loc` for `opts`' content. Returns false when the cache is full.
function _M.insert(self, opts, loc)
    if self.n >= _M.MAX then
        return false
    end
    walk(self.root, opts, true).location = loc
    self.n = self.n + 1
    return true
end

return _M

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

--- An empty cache.
function _M.new()
    return setmetatable({ root = {}, n = 0 }, mt)
end

--- The location cached for a table of `opts`' content, or nil.
function _M.find(self, opts)
    local node = self.root
    for k, v in pairs(opts) do
        node = node[k]
        if not node then
            return nil
        end
        if type(v) == "table" then
            for k2, v2 in pairs(v) do
                node = node[k2]
                node = node and node[v2]
                if not node then
                    return nil
                end
            end
            node = node[END]
        else
            node = node[v]
        end
        if not node then
            return nil
        end
    end
    return node.location
end

local function step(node, key)
    local next_node = node[key]
    if not next_node then
        next_node = {}
        node[key] = next_node
    end
    return next_node
end

--- Caches `loc` for `opts`' content. Returns false when the cache is full.
function _M.insert(self, opts, loc)
    if self.n >= _M.MAX then
        return false
    end
    local node = self.root
    for k, v in pairs(opts) do
        node = step(node, k)
        if type(v) == "table" then
            for k2, v2 in pairs(v) do
                node = step(step(node, k2), v2)
            end
            node = step(node, END)
        else
            node = step(node, v)
        end
    end
    node.location = loc
    self.n = self.n + 1
    return true
end

return _M

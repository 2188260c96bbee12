-- CatBoost models in Lua: the legacy engine's evaluator.
--
-- Part of the legacy engine, FROZEN: see resty/edgeguard/legacy/engine.lua for what
-- it is for. Not a second implementation to keep in step with Rust; its
-- outputs are pinned by tests/fixtures/legacy/.
--
-- Loads the JSON export of a CatBoost model (`save_model(path, format="json")`)
-- with lua-cjson and scores one document at a time, the way a Lua module on
-- OpenResty would before moving to Rust: oblivious trees over float borders
-- (with nan_value_treatment), one-hot categorical splits, CTR features of every
-- type (single categorical features and combinations with binarized floats and
-- one-hot matches), scale_and_bias. It reproduces CatBoost's own arithmetic:
-- features and borders are 32-bit floats, CTR formulas run in float, leaf
-- values are summed in double in tree order.
--
-- Categorical values arrive hashed (CatBoost's CityHash64 v1.0.2 truncated to
-- 32 bits); the engine takes that hash from Rust's edgeguard_cat_hash through
-- the FFI, since a Lua CityHash on uint64 cdata is neither faster nor part of
-- what is being compared. Everything else here is Lua.
--
-- A model is compiled at load into flat Lua arrays, with each CTR's value per
-- bucket computed once; a prediction reuses the model's scratch tables and
-- creates no Lua tables (the uint64 bucket keys are sunk by the JIT: about one
-- byte of garbage per prediction, measured on the shipped models).

local ffi = require "ffi"
local bit = require "bit"
local cjson = require "cjson.safe"

local ffi_new = ffi.new
local tobit = bit.tobit
local exp = math.exp
local floor = math.floor
local min = math.min
local max = math.max
local abs = math.abs
local huge = math.huge
local concat = table.concat
local sort = table.sort
local format = string.format
local byte = string.byte
local io_open = io.open
local error = error
local ipairs = ipairs
local pairs = pairs
local pcall = pcall
local setmetatable = setmetatable
local tonumber = tonumber
local tostring = tostring
local type = type

local decode = cjson.new().decode
local json_null = cjson.null

-- Rounds a double to the nearest float: CatBoost's features, borders and CTR
-- arithmetic are all 32-bit.
local f32_buf = ffi_new("float[1]")
local function f32(x)
    f32_buf[0] = x
    return f32_buf[0]
end

local MAX_FILE_BYTES = 256 * 1024 * 1024
local MAX_DEPTH = 16
local MAX_FEATURE_INDEX = 65535
local MAX_DIMENSION = 256
local INT32_MIN, INT32_MAX = -2147483648, 2147483647

-- CatBoost's CalcHash(a, b) in model/hash.h, for CTR bucket keys.
local MAGIC_MULT = 0x4906ba494954cb65ULL
-- A categorical hash enters a bucket key as (ui64)(int)hash: sign-extended.
local SIGN_EXTEND = 0xffffffff00000000ULL
local TWO32 = 4294967296
local TWO32_U = 4294967296ULL

-- Kinds of projection elements.
local CAT, FLOAT, ONE_HOT = 1, 2, 3

-- How a CTR type's table stores a bucket.
local CLASS_COUNTS, SUM_COUNT, COUNT = 1, 2, 3
local CTR_LAYOUT = {
    Borders = CLASS_COUNTS,
    Buckets = CLASS_COUNTS,
    BinarizedTargetMeanValue = SUM_COUNT,
    FloatTargetMeanValue = SUM_COUNT,
    Counter = COUNT,
    FeatureFreq = COUNT,
}

-- Losses whose raw formula value is the prediction (the Rust binding's list
-- when this engine was frozen).
local REGRESSION_LOSSES = {
    RMSE = true, MAE = true, Quantile = true, Expectile = true, LogLinQuantile = true,
    MAPE = true, Poisson = true, Tweedie = true, Huber = true, Lq = true, LogCosh = true,
    FairLoss = true,
}

local THRESHOLD_KEY = "edgeguard.threshold"

local _M = { _VERSION = "0.1.0", THRESHOLD_KEY = THRESHOLD_KEY }

local Model = {}
local model_mt = { __index = Model }

---------------------------------------------------------------------------
-- Load-time checking: every failure names the JSON field.
---------------------------------------------------------------------------

-- Raised inside compile(), caught by load(): { field = ..., msg = ... }.
local function fail(field, msg)
    error({ field = field, msg = msg }, 0)
end

local function absent(v)
    return v == nil or v == json_null
end

local function is_array(v)
    if type(v) ~= "table" then
        return false
    end
    local n = #v
    for k in pairs(v) do
        if type(k) ~= "number" or k < 1 or k > n or k ~= floor(k) then
            return false
        end
    end
    return true
end

local function is_object(v)
    return type(v) == "table" and #v == 0
end

local function is_number(v)
    return type(v) == "number"
end

local function is_string(v)
    return type(v) == "string"
end

-- The value at `field`, which must be present and pass `is`; otherwise the
-- load fails with "missing" or "expected <what>".
local function need(v, field, is, what)
    if absent(v) then
        fail(field, "missing")
    end
    if not is(v) then
        fail(field, "expected " .. what)
    end
    return v
end

local function need_array(v, field)
    return need(v, field, is_array, "an array")
end

local function opt_array(v, field)
    if absent(v) then
        return {}
    end
    return need_array(v, field)
end

local function need_object(v, field)
    return need(v, field, is_object, "an object")
end

local function need_number(v, field)
    return need(v, field, is_number, "a number")
end

local function need_integer(v, field)
    need_number(v, field)
    if v ~= floor(v) then
        fail(field, "expected an integer")
    end
    return v
end

local function need_uint(v, field)
    need_integer(v, field)
    if v < 0 then
        fail(field, "expected a non-negative integer")
    end
    return v
end

local function need_string(v, field)
    return need(v, field, is_string, "a string")
end

local function opt_string(v, field)
    if absent(v) then
        return nil
    end
    return need_string(v, field)
end

local function finite(x)
    return x == x and x ~= huge and x ~= -huge
end

-- A JSON array of numbers as floats, checked ascending.
local function borders_of(v, field)
    local list = opt_array(v, field)
    local out = {}
    for i = 1, #list do
        out[i] = f32(need_number(list[i], field .. "[" .. (i - 1) .. "]"))
        if i > 1 and out[i] < out[i - 1] then
            fail(field, "borders are not in ascending order")
        end
    end
    return out
end

-- "18446744073709551615" -> the two 32-bit halves of the bucket hash, as Lua
-- numbers (a table keyed by uint64 cdata would key by identity, not value).
local U64_MAX_TEXT = "18446744073709551615"
local function bucket_hash(text, field)
    if type(text) ~= "string" then
        fail(field, "expected a bucket hash string")
    end
    local n = #text
    if n == 0 or n > 20 or text:find("[^0-9]") or (n == 20 and text > U64_MAX_TEXT) then
        fail(field, format("%q is not a decimal bucket hash", text))
    end
    local key = 0ULL
    for i = 1, n do
        key = key * 10ULL + (byte(text, i) - 48)
    end
    return tonumber(key / TWO32_U), tonumber(key % TWO32_U)
end

local function i32_counter(v, field)
    if type(v) ~= "number" then
        fail(field, "expected a number")
    end
    if v ~= floor(v) or v < INT32_MIN or v > INT32_MAX then
        fail(field, tostring(v) .. " is not a 32-bit counter")
    end
    return v
end

---------------------------------------------------------------------------
-- Compilation
---------------------------------------------------------------------------

-- A CTR's identity as a string: type, then its categorical features, binarized
-- floats and one-hot values in the file's order (as TModelCtrBase compares).
local function ctr_identity(field, ctr_type, elements)
    local cats, floats, one_hots = {}, {}, {}
    local parsed = { cats = cats, floats = floats, one_hots = one_hots }
    need_array(elements, field)
    for i = 1, #elements do
        local at = field .. "[" .. (i - 1) .. "]"
        local e = need_object(elements[i], at)
        local kind = need_string(e.combination_element, at .. ".combination_element")
        if kind == "cat_feature_value" then
            cats[#cats + 1] = need_uint(e.cat_feature_index, at .. ".cat_feature_index")
        elseif kind == "float_feature" then
            floats[#floats + 1] = {
                need_uint(e.float_feature_index, at .. ".float_feature_index"),
                f32(need_number(e.border, at .. ".border")),
            }
        elseif kind == "cat_feature_exact_value" then
            one_hots[#one_hots + 1] = {
                need_uint(e.cat_feature_index, at .. ".cat_feature_index"),
                need_integer(e.value, at .. ".value"),
            }
        else
            fail(at .. ".combination_element", format(
                "unknown element %q (expected cat_feature_value, float_feature or cat_feature_exact_value)",
                kind))
        end
    end
    local parts = { ctr_type, "c", concat(cats, ","), "f" }
    for _, f in ipairs(floats) do
        parts[#parts + 1] = f[1] .. ":" .. format("%.9g", f[2])
    end
    parts[#parts + 1] = "o"
    for _, o in ipairs(one_hots) do
        parts[#parts + 1] = o[1] .. ":" .. o[2]
    end
    return concat(parts, "|"), parsed
end

-- compile() runs these phases in order over one JSON document; they share
-- the model `m` being filled and a build state `b`:
--   b.bins          binary features as CatBoost numbers them (split_index):
--                   float borders, then one-hot values, then CTR borders
--   b.slot          how many bin slots (one per used feature) so far
--   b.float_slot_of float feature index -> { slot, borders }
--   b.one_hot_of    categorical feature index -> { slot, value -> position }
--   b.cat_known     categorical feature index -> true
--   b.tables_by_id  CTR identity -> table number
-- Each phase fails with the JSON field it was reading.

local function check_document(doc)
    if type(doc) ~= "table" or is_array(doc) and #doc > 0 then
        fail("", "expected a JSON object")
    end
    if not absent(doc.trees) then
        fail("trees", "non-symmetric trees (grow_policy Depthwise or Lossguide) are not supported; "
            .. "train with the default SymmetricTree policy")
    end
end

local function new_model()
    return {
        metadata = {},
        float_names = {},
        cat_names = {},
        float_count = 0,
        cat_count = 0,
        dimension = 1,
        -- used float features: model float index (1-based), NaN fill, borders
        fs_feature = {}, fs_nan = {}, fs_borders = {},
        -- one-hot features: model cat index (1-based), value -> 1-based position
        oh_cat = {}, oh_index = {},
        -- CTR features: projection, table, precomputed value per bucket, the
        -- value for an unseen combination, borders
        ctr_proj = {}, ctr_table = {}, ctr_values = {}, ctr_missing = {}, ctr_borders = {},
        -- projections: arrays of element kinds and their two operands
        proj_kind = {}, proj_a = {}, proj_b = {},
        -- tables: bucket hash high half -> low half -> bucket number
        tables = {},
        -- trees: depth, first split (0-based cursor), first leaf (1-based)
        tree_depth = {}, tree_leaf = {},
        -- distinct split conditions: `bin >= threshold` ones, then one-hot
        -- `bin == value` ones; per tree level, the condition's number
        ge_slot = {}, ge_thr = {}, eq_slot = {}, eq_thr = {},
        split_cond = {},
        leaves = {},
        scale = 1,
        bias = {},
        objective = nil,
    }
end

-- model_info: string metadata and the loss function.
local function read_model_info(m, info)
    if type(info) ~= "table" then
        return
    end
    for k, v in pairs(info) do
        if type(k) == "string" and type(v) == "string" then
            m.metadata[k] = v
        end
    end
    local params = info.params
    local loss = type(params) == "table" and params.loss_function
    local name = type(loss) == "table" and loss.type
    if type(name) == "string" then
        m.loss = name
    end
end

-- A feature_index of features_info's lists: in range, and above `previous`.
local function feature_index(f, at, previous)
    local index = need_uint(f.feature_index, at .. ".feature_index")
    if index > MAX_FEATURE_INDEX then
        fail(at .. ".feature_index", index .. " is above the supported maximum " .. MAX_FEATURE_INDEX)
    end
    if index <= previous then
        fail(at .. ".feature_index", index .. ": feature indexes must increase")
    end
    return index
end

local function feature_name(f, at)
    return opt_string(f.feature_name, at .. ".feature_name")
        or opt_string(f.feature_id, at .. ".feature_id") or ""
end

-- What a NaN value of a float feature is read as.
local function nan_fill_of(f, at)
    local treatment = opt_string(f.nan_value_treatment, at .. ".nan_value_treatment") or "AsIs"
    local has_nans = f.has_nans == true
    if treatment == "AsIs" or ((treatment == "AsFalse" or treatment == "AsTrue") and not has_nans) then
        return 0 / 0
    elseif treatment == "AsFalse" then
        return -huge
    elseif treatment == "AsTrue" then
        return huge
    end
    fail(at .. ".nan_value_treatment",
        format("unknown value %q (expected AsIs, AsFalse or AsTrue)", treatment))
end

-- A new bin slot for one feature's binary features, one per item of `list`
-- (its borders or one-hot values), each bin holding its item as `key`.
-- Returns the slot.
local function add_slot(b, kind, feature, key, list, tbi)
    b.slot = b.slot + 1
    local slot, bins = b.slot, b.bins
    for k = 1, #list do
        bins[#bins + 1] = { kind = kind, feature = feature, [key] = list[k], tbi = tbi,
                            slot = slot, threshold = k }
    end
    return slot
end

-- The loop both lists of features_info share: objects with increasing
-- feature_index and a name; `add(index, f, at)` reads the rest of each.
-- Fills `names` ("" where a feature has none) and returns the feature count.
local function feature_list(list, field, names, add)
    local previous = -1
    for i = 1, #list do
        local at = field .. "[" .. (i - 1) .. "]"
        local f = need_object(list[i], at)
        local index = feature_index(f, at, previous)
        previous = index
        names[index + 1] = feature_name(f, at)
        add(index, f, at)
    end
    for i = 1, previous + 1 do
        names[i] = names[i] or ""
    end
    return previous + 1
end

-- features_info.float_features.
local function float_features(m, b, fi)
    local field = "features_info.float_features"
    m.float_count = feature_list(opt_array(fi.float_features, field), field, m.float_names, function(index, f, at)
        local nan_fill = nan_fill_of(f, at)
        local borders = borders_of(f.borders, at .. ".borders")
        if #borders > 0 then
            local slot = add_slot(b, "FloatFeature", index, "border", borders)
            local n = #m.fs_feature + 1
            m.fs_feature[n], m.fs_nan[n], m.fs_borders[n] = index + 1, nan_fill, borders
            b.float_slot_of[index] = { slot, borders }
        end
    end)
end

-- A categorical feature's one-hot values: value -> 1-based position.
local function one_hot_values(c, field)
    local values = need_array(c.values, field)
    local positions = {}
    for k = 1, #values do
        local v = need_integer(values[k], field .. "[" .. (k - 1) .. "]")
        if v < INT32_MIN or v > INT32_MAX then
            fail(field .. "[" .. (k - 1) .. "]", tostring(v) .. " is not a 32-bit categorical hash")
        end
        if positions[v] then
            fail(field .. "[" .. (k - 1) .. "]", "duplicate one-hot value " .. tostring(v))
        end
        positions[v] = k
    end
    return values, positions
end

-- features_info.categorical_features.
local function categorical_features(m, b, fi)
    local field = "features_info.categorical_features"
    m.cat_count = feature_list(opt_array(fi.categorical_features, field), field, m.cat_names, function(index, c, at)
        b.cat_known[index] = true
        if absent(c.values) then
            return
        end
        local values, positions = one_hot_values(c, at .. ".values")
        if #values > 0 then
            local slot = add_slot(b, "OneHotFeature", index, "value", values)
            local n = #m.oh_cat + 1
            m.oh_cat[n], m.oh_index[n] = index + 1, positions
            b.one_hot_of[index] = { slot, positions }
        end
    end)
end

-- The bucket records of one CTR table's hash_map: the bucket index (hash
-- high half -> low half -> bucket number), the integer counters per bucket
-- and, for the mean-value layout, the sums.
local function ctr_buckets(at, layout, stride, hash_map)
    local index, ints, sums = {}, {}, {}
    local buckets = #hash_map / stride
    for bucket = 1, buckets do
        local base = (bucket - 1) * stride
        local function item(k)
            return at .. ".hash_map[" .. (base + k) .. "]"
        end
        local hi, lo = bucket_hash(hash_map[base + 1], item(0))
        local row = index[hi]
        if not row then
            row = {}
            index[hi] = row
        end
        if row[lo] then
            fail(item(0), "duplicate bucket hash " .. hash_map[base + 1])
        end
        row[lo] = bucket
        if layout == SUM_COUNT then
            local s = hash_map[base + 2]
            if type(s) ~= "number" then
                fail(item(1), "expected a number")
            end
            sums[bucket] = f32(s)
            ints[bucket] = { i32_counter(hash_map[base + 3], item(2)) }
        else
            local counts = {}
            for k = 1, stride - 1 do
                counts[k] = i32_counter(hash_map[base + 1 + k], item(k))
            end
            ints[bucket] = counts
        end
    end
    return index, ints, sums, buckets
end

-- One table of ctr_data: its identity and the table.
local function read_ctr_table(at, name, table_doc)
    local key_doc, err = decode(name)
    if type(key_doc) ~= "table" then
        fail(at, "the key is not a CTR identifier: " .. tostring(err or "not an object"))
    end
    local ctr_type = key_doc.type
    local layout = CTR_LAYOUT[ctr_type]
    if not layout then
        fail(at, format("unknown CTR type %s", tostring(ctr_type)))
    end
    local id = ctr_identity(at .. ".identifier", ctr_type, key_doc.identifier)
    local stride = need_uint(table_doc.hash_stride, at .. ".hash_stride")
    local hash_map = need_array(table_doc.hash_map, at .. ".hash_map")
    local stride_ok = (layout == CLASS_COUNTS and stride >= 2)
        or (layout == SUM_COUNT and stride == 3) or (layout == COUNT and stride == 2)
    if not stride_ok or stride > (#hash_map > 3 and #hash_map or 3) then
        fail(at .. ".hash_stride", format("%d does not fit a %s table", stride, ctr_type))
    end
    if #hash_map % stride ~= 0 then
        fail(at .. ".hash_map", format("%d items are not a whole number of %d-item records",
            #hash_map, stride))
    end
    local denominator = absent(table_doc.counter_denominator) and 0
        or need_integer(table_doc.counter_denominator, at .. ".counter_denominator")
    if denominator < INT32_MIN or denominator > INT32_MAX then
        fail(at .. ".counter_denominator", tostring(denominator) .. " is out of range")
    end
    local index, ints, sums, buckets = ctr_buckets(at, layout, stride, hash_map)
    local counters = stride - 1 - (layout == SUM_COUNT and 1 or 0)
    return id, { index = index, ints = ints, sums = sums, buckets = buckets,
                 counters = counters, denominator = denominator }
end

-- ctr_data: the CTR tables, keyed by CTR identity. Sorted so that the first
-- bad table reported does not depend on hash order.
local function ctr_tables(m, b, data)
    if absent(data) then
        return
    end
    need_object(data, "ctr_data")
    local names = {}
    for name in pairs(data) do
        names[#names + 1] = name
    end
    sort(names)
    for _, name in ipairs(names) do
        local at = format("ctr_data[%q]", name)
        local id, t = read_ctr_table(at, name, need_object(data[name], at))
        if b.tables_by_id[id] then
            fail(at, "duplicate CTR table")
        end
        m.tables[#m.tables + 1] = t
        b.tables_by_id[id] = #m.tables
    end
end

-- The CTR's value for every bucket of its table, and for an unseen
-- combination: TModelCtr::Calc, every step rounded to float as CatBoost
-- computes it.
local function ctr_bucket_values(ctr_type, t, tbi, prior_num, prior_denom, shift, scale)
    local function calc(count_in_class, total)
        count_in_class, total = f32(count_in_class), f32(total)
        local ctr_value = f32(f32(count_in_class + prior_num) / f32(total + prior_denom))
        return f32(f32(ctr_value + shift) * scale)
    end
    local values = {}
    for bucket = 1, t.buckets do
        local counts = t.ints[bucket]
        local v
        if ctr_type == "BinarizedTargetMeanValue" or ctr_type == "FloatTargetMeanValue" then
            v = calc(t.sums[bucket], counts[1])
        elseif ctr_type == "Counter" or ctr_type == "FeatureFreq" then
            v = calc(counts[1], t.denominator)
        elseif ctr_type == "Buckets" then
            local total = 0
            for k = 1, #counts do
                total = tobit(total + counts[k]) -- int32 wrap, as CatBoost's int sum
            end
            v = calc(counts[tbi + 1], total)
        elseif #counts > 2 then
            -- Borders over several classes: those above the target border
            -- count as "good".
            local good, total = 0, 0
            for k = 1, #counts do
                if k - 1 > tbi then
                    good = tobit(good + counts[k])
                end
                total = tobit(total + counts[k])
            end
            v = calc(good, total)
        else
            v = calc(counts[2], tobit(counts[1] + counts[2]))
        end
        values[bucket] = v
    end
    local missing
    if ctr_type == "Counter" or ctr_type == "FeatureFreq" then
        missing = calc(0, t.denominator)
    else
        missing = calc(0, 0)
    end
    return values, missing
end

-- A CTR's projection in CatBoost's hashing order: categorical values, then
-- binarized floats, then one-hot matches; as element kinds and operands.
local function ctr_projection(b, field, parsed)
    local kinds, as, bs = {}, {}, {}
    for _, c in ipairs(parsed.cats) do
        if not b.cat_known[c] then
            fail(field, format("categorical feature %d is not in features_info.categorical_features", c))
        end
        kinds[#kinds + 1], as[#as + 1], bs[#bs + 1] = CAT, c + 1, 0
    end
    for _, f in ipairs(parsed.floats) do
        local s = b.float_slot_of[f[1]]
        if not s then
            fail(field, format("float feature %d has no borders", f[1]))
        end
        local k
        for j = 1, #s[2] do
            if s[2][j] == f[2] then
                k = j
                break
            end
        end
        if not k then
            fail(field, format("%.9g is not a border of float feature %d", f[2], f[1]))
        end
        kinds[#kinds + 1], as[#as + 1], bs[#bs + 1] = FLOAT, s[1], k
    end
    for _, o in ipairs(parsed.one_hots) do
        local s = b.one_hot_of[o[1]]
        if not s then
            fail(field, format("categorical feature %d is not one-hot encoded", o[1]))
        end
        local k = s[2][o[2]]
        if not k then
            fail(field, format("%d is not a one-hot value of feature %d", o[2], o[1]))
        end
        kinds[#kinds + 1], as[#as + 1], bs[#bs + 1] = ONE_HOT, s[1], k
    end
    return kinds, as, bs
end

-- Whether a CTR's target_border_idx fits its table.
local function check_target_border(at, ctr_type, tbi, classes)
    local tbi_ok
    if ctr_type == "Borders" then
        tbi_ok = classes >= 2 and tbi >= 0 and tbi < classes
    elseif ctr_type == "Buckets" then
        tbi_ok = tbi >= 0 and tbi < classes
    else
        tbi_ok = tbi >= 0
    end
    if not tbi_ok then
        fail(at .. ".target_border_idx", format("%d does not fit a table of %d classes", tbi, classes))
    end
end

-- One CTR feature of features_info.ctrs.
local function ctr_feature(m, b, at, ctr, projections)
    local ctr_type = need_string(ctr.ctr_type, at .. ".ctr_type")
    if not CTR_LAYOUT[ctr_type] then
        fail(at .. ".ctr_type", format("unknown CTR type %q (expected Borders, Buckets, "
            .. "BinarizedTargetMeanValue, FloatTargetMeanValue, Counter or FeatureFreq)", ctr_type))
    end
    local id, parsed = ctr_identity(at .. ".elements", ctr_type, ctr.elements)
    local tn = b.tables_by_id[id]
    if not tn then
        fail(at .. ".elements", "no ctr_data table for this CTR")
    end
    local t = m.tables[tn]
    local tbi = need_integer(ctr.target_border_idx, at .. ".target_border_idx")
    check_target_border(at, ctr_type, tbi, t.counters)
    local prior_num = f32(need_number(ctr.prior_numerator, at .. ".prior_numerator"))
    local prior_denom = f32(need_number(ctr.prior_denomerator, at .. ".prior_denomerator"))
    local shift = f32(need_number(ctr.shift, at .. ".shift"))
    local scale = f32(need_number(ctr.scale, at .. ".scale"))
    local values, missing = ctr_bucket_values(ctr_type, t, tbi, prior_num, prior_denom, shift, scale)

    local kinds, as, bs = ctr_projection(b, at .. ".elements", parsed)
    local ptext = concat(kinds, ",") .. "|" .. concat(as, ",") .. "|" .. concat(bs, ",")
    local p = projections[ptext]
    if not p then
        p = #m.proj_kind + 1
        m.proj_kind[p], m.proj_a[p], m.proj_b[p] = kinds, as, bs
        projections[ptext] = p
    end

    local borders = borders_of(ctr.borders, at .. ".borders")
    add_slot(b, "OnlineCtr", nil, "border", borders, tbi)
    local n = #m.ctr_proj + 1
    m.ctr_proj[n], m.ctr_table[n] = p, tn
    m.ctr_values[n], m.ctr_missing[n], m.ctr_borders[n] = values, missing, borders
end

-- features_info.ctrs, then the tables' counters are dropped: only the
-- per-CTR values are read from here on.
local function ctr_features(m, b, fi)
    local projections = {} -- canonical projection text -> projection number
    local ctr_list = opt_array(fi.ctrs, "features_info.ctrs")
    for i = 1, #ctr_list do
        local at = "features_info.ctrs[" .. (i - 1) .. "]"
        ctr_feature(m, b, at, need_object(ctr_list[i], at), projections)
    end
    m.slot_count = b.slot
    for _, t in ipairs(m.tables) do
        t.ints, t.sums = nil, nil
    end
end

-- Whether a split's own fields (where present) describe binary feature `bin`.
local function split_matches(split, split_type, bin)
    local border = split.border
    if split_type ~= bin.kind then
        return false
    elseif bin.kind == "FloatFeature" then
        return (absent(split.float_feature_index) or split.float_feature_index == bin.feature)
            and (type(border) ~= "number" or f32(border) == bin.border)
    elseif bin.kind == "OneHotFeature" then
        return (absent(split.cat_feature_index) or split.cat_feature_index == bin.feature)
            and (absent(split.value) or split.value == bin.value)
    end
    return (absent(split.ctr_target_border_idx) or split.ctr_target_border_idx == bin.tbi)
        and (type(border) ~= "number" or f32(border) == bin.border)
end

-- One split of a tree: its binary feature, checked against the split's fields.
local function tree_split(bins, sat, split)
    local index = need_uint(split.split_index, sat .. ".split_index")
    local split_type = need_string(split.split_type, sat .. ".split_type")
    local bin = bins[index + 1]
    if not bin then
        fail(sat .. ".split_index", format("%d is out of range: the model has %d binary features",
            index, #bins))
    end
    if split_type ~= "FloatFeature" and split_type ~= "OneHotFeature" and split_type ~= "OnlineCtr" then
        fail(sat .. ".split_type", format(
            "unknown split type %q (expected FloatFeature, OneHotFeature or OnlineCtr)", split_type))
    end
    if not split_matches(split, split_type, bin) then
        fail(sat, format("does not match binary feature %d (%s) of features_info", index, bin.kind))
    end
    return bin
end

-- oblivious_trees: depths, leaves and, per tree level, the split's
-- condition (distinct conditions shared). Returns the conditions in order of
-- first use and the condition of every level.
local function trees(m, b, list)
    local dimension
    local level = 0
    local conditions, condition_list, level_conditions = {}, {}, {}
    for t = 1, #list do
        local at = "oblivious_trees[" .. (t - 1) .. "]"
        local tree = need_object(list[t], at)
        local splits = need_array(tree.splits, at .. ".splits")
        local leaf_values = need_array(tree.leaf_values, at .. ".leaf_values")
        local depth = #splits
        if depth > MAX_DEPTH then
            fail(at .. ".splits", format("depth %d exceeds the supported %d", depth, MAX_DEPTH))
        end
        local width = 2 ^ depth
        local leaves = #leaf_values
        dimension = dimension or floor(leaves / width)
        if dimension == 0 or dimension > MAX_DIMENSION or leaves ~= width * dimension then
            fail(at .. ".leaf_values", format(
                "%d values for depth %d; expected 2^depth times the model dimension", leaves, depth))
        end
        m.tree_depth[t] = depth
        m.tree_leaf[t] = #m.leaves + 1
        for s = 1, depth do
            local sat = at .. ".splits[" .. (s - 1) .. "]"
            local bin = tree_split(b.bins, sat, need_object(splits[s], sat))
            level = level + 1
            local cond = bin.slot .. (bin.kind == "OneHotFeature" and "==" or ">=") .. bin.threshold
            local c = conditions[cond]
            if not c then
                c = { bin.slot, bin.threshold, bin.kind == "OneHotFeature" }
                conditions[cond] = c
                condition_list[#condition_list + 1] = c
            end
            level_conditions[level] = c
        end
        local leaves_out = m.leaves
        local base = #leaves_out
        for k = 1, leaves do
            leaves_out[base + k] = need_number(leaf_values[k], at .. ".leaf_values[" .. (k - 1) .. "]")
        end
    end
    m.dimension = dimension or 1
    return condition_list, level_conditions
end

-- Numbers the distinct conditions so that each is evaluated once per
-- document, `>=` ones first and then `==` ones, each kind in its own loop;
-- and gives every tree level its condition's number.
local function number_conditions(m, condition_list, level_conditions)
    for _, c in ipairs(condition_list) do
        if not c[3] then
            m.ge_slot[#m.ge_slot + 1], m.ge_thr[#m.ge_thr + 1] = c[1], c[2]
            c.number = #m.ge_slot
        end
    end
    for _, c in ipairs(condition_list) do
        if c[3] then
            m.eq_slot[#m.eq_slot + 1], m.eq_thr[#m.eq_thr + 1] = c[1], c[2]
            c.number = #m.ge_slot + #m.eq_slot
        end
    end
    for k = 1, #level_conditions do
        m.split_cond[k] = level_conditions[k].number
    end
end

-- scale_and_bias: [scale, [bias...]], the bias spread over the dimensions.
local function scale_and_bias(m, sab)
    local scale, bias = 1, {}
    if not absent(sab) then
        need_array(sab, "scale_and_bias")
        if #sab ~= 2 then
            fail("scale_and_bias", "expected [scale, [bias...]]")
        end
        scale = need_number(sab[1], "scale_and_bias[0]")
        local list = need_array(sab[2], "scale_and_bias[1]")
        for k = 1, #list do
            bias[k] = need_number(list[k], "scale_and_bias[1][" .. (k - 1) .. "]")
        end
    end
    if not finite(scale) then
        fail("scale_and_bias", "scale and bias must be finite")
    end
    for k = 1, #bias do
        if not finite(bias[k]) then
            fail("scale_and_bias", "scale and bias must be finite")
        end
    end
    local dim = m.dimension
    if #bias == 0 then
        for k = 1, dim do
            bias[k] = 0
        end
    elseif #bias == 1 then
        for k = 2, dim do
            bias[k] = bias[1]
        end
    elseif #bias ~= dim then
        fail("scale_and_bias", format("%d bias values for a model of dimension %d", #bias, dim))
    end
    m.scale, m.bias = scale, bias
end

local function compile(doc)
    check_document(doc)
    local m = new_model()
    read_model_info(m, doc.model_info)
    local fi = need_object(doc.features_info, "features_info")
    local b = { bins = {}, slot = 0, float_slot_of = {}, one_hot_of = {}, cat_known = {}, tables_by_id = {} }
    float_features(m, b, fi)
    categorical_features(m, b, fi)
    ctr_tables(m, b, doc.ctr_data)
    ctr_features(m, b, fi)
    local condition_list, level_conditions = trees(m, b, need_array(doc.oblivious_trees, "oblivious_trees"))
    number_conditions(m, condition_list, level_conditions)
    scale_and_bias(m, doc.scale_and_bias)
    return m
end

-- What the model's score is, by the Rust binding's rule when this engine
-- was frozen: a
-- probability for binary classifiers, the raw value for regressions; other
-- models cannot be scored (the reason is returned instead).
local function score_kind(m)
    local loss = m.loss
    local objective
    if loss == nil then
        objective = "unknown objective"
    elseif loss == "Logloss" or loss == "CrossEntropy" then
        objective = "binary classification"
    else
        objective = loss
    end
    if m.dimension ~= 1 then
        return nil, format("the model has %d outputs (%s); the scorer needs one score per model "
            .. "(a binary classifier or a regression)", m.dimension, objective)
    end
    if objective == "binary classification" then
        return "probability"
    end
    if REGRESSION_LOSSES[loss] then
        return "raw"
    end
    if loss == nil then
        return nil, "model_info.params.loss_function is missing: cannot tell a classifier "
            .. "from a regression; export the model with its training params"
    end
    return nil, format("loss function `%s` is neither a binary classifier nor a regression", loss)
end

-- The model's own threshold (metadata `edgeguard.threshold`), checked against
-- its score kind.
local function threshold_of(m, kind)
    local text = m.metadata[THRESHOLD_KEY]
    if text == nil then
        return nil
    end
    local bad = format("model_info[%q] = %q: ", THRESHOLD_KEY, text)
    local value = tonumber((text:gsub("^%s+", ""):gsub("%s+$", "")))
    if value == nil then
        return nil, bad .. "not a number"
    end
    if kind == "probability" and not (value >= 0 and value <= 1) then
        return nil, bad .. "not a probability in [0, 1]"
    end
    if kind == "raw" and not finite(value) then
        return nil, bad .. "not a finite number"
    end
    return value
end

local function read_capped(path)
    local f, err = io_open(path, "rb")
    if not f then
        return nil, "cannot open: " .. tostring(err)
    end
    local size = f:seek("end")
    if size and size > MAX_FILE_BYTES then
        f:close()
        return nil, format("larger than the %d MiB limit for a model", MAX_FILE_BYTES / 1048576)
    end
    f:seek("set")
    local text = f:read("*a")
    f:close()
    if not text then
        return nil, "cannot read"
    end
    return text
end

--- Compiles a model from the text of its JSON export; `source` names it in
-- errors. Returns the model, or nil and "source: field: message".
function _M.from_json(source, text, cat_hash)
    if type(source) ~= "string" or type(text) ~= "string" then
        error("from_json(source, text): source and text must be strings", 2)
    end
    if cat_hash ~= nil and type(cat_hash) ~= "function" then
        error("cat_hash must be a function(string) -> hash", 2)
    end
    if #text > MAX_FILE_BYTES then
        return nil, format("%s: larger than the %d MiB limit for a model", source, MAX_FILE_BYTES / 1048576)
    end
    local doc, jerr = decode(text)
    if doc == nil then
        return nil, format("%s: not a JSON model: %s", source, tostring(jerr))
    end
    local ok, m = pcall(compile, doc)
    if not ok then
        if type(m) == "table" and m.msg then
            if m.field == "" then
                return nil, source .. ": " .. m.msg
            end
            return nil, source .. ": " .. m.field .. ": " .. m.msg
        end
        -- A shape the checks above did not foresee: still an error, not a crash.
        return nil, source .. ": malformed model: " .. tostring(m)
    end
    m.source = source
    m.cat_hash = cat_hash
    m.kind, m.kind_error = score_kind(m)
    m.threshold, m.threshold_error = threshold_of(m, m.kind)
    m.bins = {}
    m.bits = {}
    m.raw = {}
    for k = 1, m.dimension do
        m.raw[k] = 0
    end
    return setmetatable(m, model_mt)
end

--- Loads a model file (a CatBoost JSON export). `cat_hash(str)` is CatBoost's
-- categorical hash, used by predict_strings. Returns the model, or nil and an
-- error naming the file and the JSON field.
function _M.load(path, cat_hash)
    if type(path) ~= "string" then
        error("load(path, cat_hash): path must be a string", 2)
    end
    if cat_hash ~= nil and type(cat_hash) ~= "function" then
        error("cat_hash must be a function(string) -> hash", 2)
    end
    local text, err = read_capped(path)
    if not text then
        return nil, path .. ": " .. err
    end
    return _M.from_json(path, text, cat_hash)
end

---------------------------------------------------------------------------
-- Evaluation
---------------------------------------------------------------------------

-- How many of the ascending `borders` are below `v` (0 for NaN).
local function count_below(borders, v)
    local lo, hi = 1, #borders + 1
    while lo < hi do
        local mid = floor((lo + hi) / 2)
        if borders[mid] < v then
            lo = mid + 1
        else
            hi = mid
        end
    end
    return lo - 1
end

-- predict_raw's phases. Each writes into the model's scratch tables and
-- creates no Lua tables; the JIT compiles them into the caller's trace.

-- Float and one-hot bins: slots 1..n of `bins`; returns the next free slot
-- count.
local function feature_bins(self, floats, cats, bins)
    local fs_feature, fs_nan, fs_borders = self.fs_feature, self.fs_nan, self.fs_borders
    local slot = 0
    for i = 1, #fs_feature do
        f32_buf[0] = floats[fs_feature[i]]
        local v = f32_buf[0]
        if v ~= v then
            v = fs_nan[i]
        end
        slot = slot + 1
        bins[slot] = count_below(fs_borders[i], v)
    end

    local oh_cat, oh_index = self.oh_cat, self.oh_index
    for i = 1, #oh_cat do
        slot = slot + 1
        bins[slot] = oh_index[i][tobit(cats[oh_cat[i]])] or 0
    end
    return slot
end

-- CTR bins after slot `slot`: each CTR's projection hashed into a bucket key
-- (once per run of CTRs on one projection), looked up in its table (once per
-- run on one table), the bucket's precomputed value binarized.
local function ctr_bins(self, cats, bins, slot)
    local ctr_proj, ctr_table = self.ctr_proj, self.ctr_table
    local ctr_values, ctr_missing, ctr_borders = self.ctr_values, self.ctr_missing, self.ctr_borders
    local proj_kind, proj_a, proj_b, tables = self.proj_kind, self.proj_a, self.proj_b, self.tables
    local last_proj, last_table, hi, lo, bucket = 0, 0, 0, 0, nil
    for i = 1, #ctr_proj do
        local p = ctr_proj[i]
        if p ~= last_proj then
            last_proj, last_table = p, 0
            local kinds, as, bs = proj_kind[p], proj_a[p], proj_b[p]
            local key = 0ULL
            for e = 1, #kinds do
                local kind, a = kinds[e], as[e]
                local v
                if kind == CAT then
                    local h = cats[a]
                    if h < 0 then
                        h = h + TWO32
                    end
                    if h >= 2147483648 then
                        v = h + SIGN_EXTEND
                    else
                        v = h + 0ULL
                    end
                elseif kind == FLOAT then
                    v = bins[a] >= bs[e] and 1ULL or 0ULL
                else
                    v = bins[a] == bs[e] and 1ULL or 0ULL
                end
                key = MAGIC_MULT * (key + MAGIC_MULT * v)
            end
            hi, lo = tonumber(key / TWO32_U), tonumber(key % TWO32_U)
        end
        local t = ctr_table[i]
        if t ~= last_table then
            last_table = t
            local row = tables[t].index[hi]
            bucket = row and row[lo]
        end
        local value = bucket and ctr_values[i][bucket] or ctr_missing[i]
        slot = slot + 1
        bins[slot] = count_below(ctr_borders[i], value)
    end
end

-- Conditions as 0 / 1 without branching on the data (min / max are SSE
-- instructions in compiled code): trees then read them without the side
-- exits a data-dependent `if` per level would cost.
local function condition_bits(self, bins)
    local bits = self.bits
    local ge_slot, ge_thr = self.ge_slot, self.ge_thr
    local n_ge = #ge_slot
    for c = 1, n_ge do
        bits[c] = min(max(bins[ge_slot[c]] - ge_thr[c] + 1, 0), 1)
    end
    local eq_slot, eq_thr = self.eq_slot, self.eq_thr
    for c = 1, #eq_slot do
        bits[n_ge + c] = 1 - min(abs(bins[eq_slot[c]] - eq_thr[c]), 1)
    end
    return bits
end

-- The sum of the trees' leaves into out[1..dimension], scaled and biased.
local function sum_trees(self, bits, out)
    local split_cond, tree_depth, tree_leaf, leaves = self.split_cond, self.tree_depth, self.tree_leaf, self.leaves
    local dim = self.dimension
    local level = 0
    if dim == 1 then
        local sum = 0
        for t = 1, #tree_depth do
            local index, weight = 0, 1
            for _ = 1, tree_depth[t] do
                level = level + 1
                index = index + bits[split_cond[level]] * weight
                weight = weight + weight
            end
            sum = sum + leaves[tree_leaf[t] + index]
        end
        out[1] = self.scale * sum + self.bias[1]
        return out
    end
    for k = 1, dim do
        out[k] = 0
    end
    for t = 1, #tree_depth do
        local index, weight = 0, 1
        for _ = 1, tree_depth[t] do
            level = level + 1
            index = index + bits[split_cond[level]] * weight
            weight = weight + weight
        end
        local at = tree_leaf[t] + index * dim - 1
        for k = 1, dim do
            out[k] = out[k] + leaves[at + k]
        end
    end
    local scale, bias = self.scale, self.bias
    for k = 1, dim do
        out[k] = scale * out[k] + bias[k]
    end
    return out
end

--- Scores one document: `floats[i]` is the model's float feature i (1-based,
-- NaN for a missing value), `cats[i]` CatBoost's hash of categorical feature
-- i (unsigned or signed 32-bit). Writes the raw formula values (one per
-- dimension) into `out` (default: a table reused by the model) and returns it.
function Model:predict_raw(floats, cats, out)
    local bins = self.bins
    local slot = feature_bins(self, floats, cats, bins)
    ctr_bins(self, cats, bins, slot)
    return sum_trees(self, condition_bits(self, bins), out or self.raw)
end

--- The model's score for one document (see predict_raw for the inputs): the
-- probability 1 / (1 + exp(-raw)) for a binary classifier, the raw value for
-- a regression. Raises for a model the scorer cannot use (model.kind is nil).
function Model:predict(floats, cats)
    local kind = self.kind
    if not kind then
        error(self.source .. ": " .. self.kind_error, 2)
    end
    local raw = self:predict_raw(floats, cats, self.raw)[1]
    if kind == "probability" then
        return 1 / (1 + exp(-raw))
    end
    return raw
end

--- predict() with categorical values as strings, hashed with the cat_hash
-- given at load into `hashes` (a table the caller may reuse).
function Model:predict_strings(floats, strings, hashes)
    local cat_hash = self.cat_hash
    if not cat_hash then
        error("predict_strings needs the cat_hash function given to catboost.load", 2)
    end
    hashes = hashes or {}
    for i = 1, self.cat_count do
        hashes[i] = cat_hash(strings[i])
    end
    return self:predict(floats, hashes)
end

--- Model input names by index (1-based); "" where the model has none.
function Model:float_feature_names()
    return self.float_names
end

function Model:cat_feature_names()
    return self.cat_names
end

return _M

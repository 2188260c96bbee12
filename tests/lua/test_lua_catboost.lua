-- The Lua engine's CatBoost evaluator against official CatBoost's predictions
-- (tests/fixtures/catboost, benches/data) and against the Rust evaluator
-- (edgeguard_model_* over the FFI), document by document, to 1e-9 relative.
-- Run from the repository root with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local bit = require "bit"
local cjson = require "cjson"

local lib = T.lib()
local catboost = require "resty.edgeguard.legacy.catboost"

-- Through the engine's wrapper: see lua_engine.cat_hash_function.
local cat_hash = require("resty.edgeguard.legacy.engine").cat_hash_function(lib)

local read = T.read

local function lines(path)
    local out = {}
    for line in io.lines(path) do
        out[#out + 1] = cjson.decode(line)
    end
    return out
end

local tmpfile = T.tmpfile

local function close(got, want)
    local diff = math.abs(got - want)
    return diff <= 1e-9 * math.max(math.abs(got), math.abs(want)) or diff <= 1e-12
end

-- A fixture document: NaN is null, infinities are "inf" / "-inf".
local function document(doc)
    local floats, hashes = {}, {}
    for i, v in ipairs(doc.float) do
        if v == cjson.null then
            floats[i] = 0 / 0
        elseif v == "inf" then
            floats[i] = math.huge
        elseif v == "-inf" then
            floats[i] = -math.huge
        else
            floats[i] = v
        end
    end
    for i, s in ipairs(doc.cat) do
        hashes[i] = cat_hash(s)
    end
    return floats, hashes
end

-- The Rust evaluator on the same file, through the C ABI.
local errbuf = ffi.new("char[512]")
local function rust_model(path)
    local out = ffi.new("edgeguard_model *[1]")
    local rc = lib.edgeguard_model_new_from_file(path, out, errbuf, 512)
    assert(rc == 0, ffi.string(errbuf))
    return ffi.gc(out[0], function(p) lib.edgeguard_model_free(p) end)
end

local function rust_raw(handle, floats, hashes, dim)
    local nf, nc = #floats, #hashes
    local cf = ffi.new("float[?]", math.max(nf, 1))
    local cc = ffi.new("int32_t[?]", math.max(nc, 1))
    for i = 1, nf do cf[i - 1] = floats[i] end
    for i = 1, nc do cc[i - 1] = bit.tobit(hashes[i]) end
    local out = ffi.new("double[?]", dim)
    local rc = lib.edgeguard_model_predict(handle, cf, nf, cc, nc, 0, out, dim)
    if rc ~= 0 then
        error("edgeguard_model_predict: " .. tonumber(rc))
    end
    local t = {}
    for k = 1, dim do t[k] = out[k - 1] end
    return t
end

-- Checks every document of a model against CatBoost's predictions and the
-- Rust evaluator; returns how many values were compared.
local function check(name, json_path, docs_path, expected_path)
    local model, err = catboost.load(json_path, cat_hash)
    assert(model, err)
    local handle = rust_model(json_path)
    local dim = tonumber(lib.edgeguard_model_dimension(handle))
    T.eq(model.dimension, dim, name .. " dimension")
    T.eq(model.float_count, tonumber(lib.edgeguard_model_float_feature_count(handle)), name .. " floats")
    T.eq(model.cat_count, tonumber(lib.edgeguard_model_cat_feature_count(handle)), name .. " cats")
    local docs, expected = lines(docs_path), lines(expected_path)
    T.eq(#docs, #expected, name .. ": one expectation per document")
    T.ok(#docs >= 190, name .. " has its documents")
    local compared, same_bits, catboost_bits = 0, 0, 0
    local out = {}
    for i, doc in ipairs(docs) do
        local floats, hashes = document(doc)
        local raw = model:predict_raw(floats, hashes, out)
        local want = expected[i].raw
        local rust = rust_raw(handle, floats, hashes, dim)
        T.eq(#want, dim, name .. " doc " .. i .. " expected dimension")
        for k = 1, dim do
            if not close(raw[k], want[k]) then
                error(string.format("%s doc %d raw[%d]: Lua %.17g != CatBoost %.17g", name, i, k, raw[k], want[k]))
            end
            if not close(raw[k], rust[k]) then
                error(string.format("%s doc %d raw[%d]: Lua %.17g != Rust %.17g", name, i, k, raw[k], rust[k]))
            end
            if raw[k] == rust[k] then
                same_bits = same_bits + 1
            end
            if raw[k] == want[k] then
                catboost_bits = catboost_bits + 1
            end
            compared = compared + 1
        end
        if model.kind == "probability" then
            local p = model:predict(floats, hashes)
            local wp = expected[i].probability[1]
            if not close(p, wp) then
                error(string.format("%s doc %d probability: Lua %.17g != CatBoost %.17g", name, i, p, wp))
            end
            T.eq(model:predict_strings(floats, doc.cat), p, name .. " doc " .. i .. " from strings")
            compared = compared + 1
        elseif model.kind == "raw" then
            T.eq(model:predict(floats, hashes), raw[1], name .. " regression score is the raw value")
        end
    end
    -- Same inputs, same float rounding, same summation order: CatBoost's
    -- exact bits, not just 1e-9.
    T.eq(catboost_bits, #docs * dim, name .. ": raw values bit-identical to CatBoost")
    print(string.format("     %s: %d documents, %d values equal to CatBoost and Rust to 1e-9; "
        .. "raw values bit-identical to CatBoost %d, to Rust %d", name, #docs, compared, catboost_bits,
        same_bits))
    return compared, model, catboost_bits
end

T.test("categorical hashes equal CatBoost's, also once the caller is JIT-compiled", function()
    local cases = lines("tests/fixtures/catboost/cat_hash.jsonl")
    T.ok(#cases > 50, "hash fixture has its cases")
    -- Enough rounds for the loop to be traced: the bug this guards against
    -- (a uint32_t return read as 64 bits) only shows in compiled code.
    for _ = 1, 50 do
        for _, c in ipairs(cases) do
            local h = cat_hash(c.value)
            if h ~= c.hash then
                error(string.format("cat_hash(%q) = %s, CatBoost %s", c.value, tostring(h), tostring(c.hash)))
            end
        end
    end
end)

local FIXTURES = "tests/fixtures/catboost/"
local function fixture(name)
    return check(name, FIXTURES .. name .. ".json", FIXTURES .. name .. ".docs.jsonl",
        FIXTURES .. name .. ".expected.jsonl")
end

T.test("binary classifier with CTR combinations and one-hot", function()
    local n, model = fixture("binary_ctr")
    T.ok(n >= 190 * 2, "raw and probability compared")
    T.eq(model.kind, "probability")
    T.eq(model.threshold, 0.83)
end)

T.test("FeatureFreq CTRs", function()
    fixture("binary_featurefreq")
end)

T.test("deep float-only regression with NaN treatment", function()
    local _, model = fixture("regression_deep")
    T.eq(model.kind, "raw")
end)

-- Every dimension's raw value; probabilities (softmax) are not what the
-- engine reports (the scorer refuses multi-output models), so not compared.
T.test("MultiClass with BinarizedTargetMeanValue: raw values of every class", function()
    local _, model = fixture("multiclass_cat")
    T.eq(model.kind, nil)
    T.contains(model.kind_error, "3 outputs")
end)

T.test("regression with CTRs and scale_and_bias", function()
    fixture("regression_cat")
end)

T.test("FloatTargetMeanValue CTRs", function()
    fixture("regression_floatmean")
end)

T.test("benchmark models (hundreds of CTR features)", function()
    for _, name in ipairs({ "model-baseline", "model-bench" }) do
        check(name, "benches/data/" .. name .. ".json", "benches/data/" .. name .. "-docs.jsonl",
            "benches/data/" .. name .. "-expected.jsonl")
    end
end)

T.test("shipped models load with their kind and threshold", function()
    for _, name in ipairs({ "bot", "spoof" }) do
        local path = "models/" .. name .. ".json"
        local model = assert(catboost.load(path, cat_hash))
        local doc = cjson.decode(read(path))
        T.eq(model.kind, "probability", name)
        T.eq(model.threshold, tonumber(doc.model_info["edgeguard.threshold"]), name .. " threshold")
        T.eq(#model.float_names, #doc.features_info.float_features, name .. " float names")
        T.eq(model.float_names[1], doc.features_info.float_features[1].feature_id, name .. " first name")
    end
end)

-- The fixtures cover what they are named after: a regenerated fixture cannot
-- silently stop exercising a CTR type or a NaN treatment.
T.test("fixtures cover every CTR type, element kind and NaN treatment", function()
    local seen = {}
    for _, name in ipairs({ "binary_ctr", "binary_featurefreq", "regression_deep", "multiclass_cat",
                            "regression_cat", "regression_floatmean" }) do
        local doc = cjson.decode(read(FIXTURES .. name .. ".json"))
        for _, ctr in ipairs(doc.features_info.ctrs or {}) do
            seen[ctr.ctr_type] = true
            for _, e in ipairs(ctr.elements) do
                seen[e.combination_element] = true
            end
            if #ctr.elements > 1 then
                seen.combination = true
            end
        end
        for _, f in ipairs(doc.features_info.float_features or {}) do
            if f.has_nans then
                seen[f.nan_value_treatment] = true
            end
        end
        if doc.scale_and_bias and doc.scale_and_bias[1] ~= 1 then
            seen.scale = true
        end
    end
    for _, want in ipairs({ "Borders", "Buckets", "Counter", "FeatureFreq", "BinarizedTargetMeanValue",
                            "FloatTargetMeanValue", "cat_feature_value", "float_feature",
                            "cat_feature_exact_value", "combination", "AsFalse", "AsTrue", "scale" }) do
        T.ok(seen[want], "a fixture has " .. want)
    end
end)

-- Bad models: refused with the file and the field; never a Lua error.
local function refused(text, want_field)
    local path = tmpfile(text)
    local model, err = catboost.load(path, cat_hash)
    os.remove(path)
    T.eq(model, nil, "model from bad input")
    T.contains(err, path .. ": ")
    if want_field then
        T.contains(err, want_field)
    end
    return err
end

T.test("bad models are refused with file and field", function()
    local good = read(FIXTURES .. "binary_ctr.json")
    refused("", "not a JSON model")
    refused(good:sub(1, #good / 2), "not a JSON model")
    refused("this is not json", "not a JSON model")
    refused("[1, 2, 3]", "expected a JSON object")
    refused("{}", "features_info: missing")
    refused('{"features_info": {}}', "oblivious_trees: missing")
    -- An unknown CTR type, in the table key and in the feature list.
    local err = refused((good:gsub('"ctr_type":"Borders"', '"ctr_type":"Bogus"')),
        "features_info.ctrs[0].ctr_type")
    T.contains(err, 'unknown CTR type "Bogus"')
    err = refused((good:gsub('\\"type\\":\\"Counter\\"', '\\"type\\":\\"Bogus\\"')), "ctr_data[")
    T.contains(err, "unknown CTR type Bogus")
    -- Structural damage the JSON parser accepts.
    refused((good:gsub('"split_index":105', '"split_index":100000', 1)), "split_index: 100000 is out of range")
    refused((good:gsub('"split_index":105', '"split_index":"x"', 1)), "split_index: expected a number")
    refused((good:gsub('"18446744073709551615"', '"1844674407370955161x"', 1)), ".hash_map[")
    refused((good:gsub('"18446744073709551615"', '"99999999999999999999"', 1)), "not a decimal bucket hash")
    refused((good:gsub('"hash_stride":3', '"hash_stride":1', 1)), ".hash_stride: 1 does not fit")
    refused((good:gsub('"leaf_values":%[', '"leaf_values":[0.5,', 1)), "oblivious_trees[0].leaf_values")
    refused((good:gsub('"nan_value_treatment":"AsFalse"', '"nan_value_treatment":"Sometimes"', 1)),
        "features_info.float_features[0].nan_value_treatment")
    refused((good:gsub('"scale_and_bias":%[1,', '"scale_and_bias":["big",', 1)), "scale_and_bias[0]")
    local _, e = catboost.load("/nonexistent/model.json")
    T.contains(e, "/nonexistent/model.json: cannot open")
end)

T.test("every truncation of a model is refused, never a crash", function()
    local good = read(FIXTURES .. "regression_cat.json")
    local step = math.floor(#good / 97)
    for cut = 0, #good - 1, step do
        local model, err = catboost.from_json("cut.json", good:sub(1, cut))
        T.eq(model, nil, "truncated at " .. cut)
        T.contains(err, "cut.json: ")
    end
end)

T.test("misuse raises at the caller's line", function()
    T.contains(T.raises(function() catboost.load(42) end), "test_lua_catboost.lua:")
    T.contains(T.raises(function() catboost.load("x", "nope") end), "cat_hash must be a function")
    local model = assert(catboost.load(FIXTURES .. "multiclass_cat.json"))
    T.contains(T.raises(function() model:predict({ 0, 0 }, { 0, 0 }) end), "outputs")
end)

T.run()

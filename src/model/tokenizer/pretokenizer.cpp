#include "model/tokenizer/pretokenizer.h"

#include <utility>

namespace tandem::tokenizer {

namespace {

// Regexes of llama.cpp's llm_tokenizer_bpe (src/llama-vocab.cpp), one per pre-tokenizer family.
// Case-insensitive contractions are spelled out as character classes there; kept that way.
#define TANDEM_CONTRACTIONS R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))re"

const std::string kGpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
const std::string kLlama3 =
    TANDEM_CONTRACTIONS
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const std::string kQwen2 =
    TANDEM_CONTRACTIONS
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const std::string kCjk = R"re([一-龥぀-ゟ゠-ヿ]+)re";
const std::string kAsciiPunctThenLetters = R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+)re";
const std::string kFinnish = R"re( ?[^(\s|.,!?…。，、।۔،)]+)re";

struct NamedSpec {
  std::vector<std::string_view> names;
  PreTokenizerSpec spec;
};

PreTokenizerSpec make(std::vector<std::string> regexes, bool clean_spaces = true) {
  PreTokenizerSpec spec;
  spec.regexes = std::move(regexes);
  spec.clean_spaces = clean_spaces;
  return spec;
}

std::vector<NamedSpec> build_table() {
  std::vector<NamedSpec> table;
  auto add = [&](std::vector<std::string_view> names, PreTokenizerSpec spec) {
    table.push_back({std::move(names), std::move(spec)});
  };

  add({"default"}, make({R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}));
  {
    PreTokenizerSpec llama3 = make({kLlama3});
    llama3.ignore_merges = true;
    llama3.add_bos = true;
    add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
         "jina-v5-nano"},
        llama3);
  }
  add({"dbrx", "smaug-bpe"}, make({kLlama3}));
  {
    PreTokenizerSpec glm = make({kLlama3});
    glm.has_default_bos = false;
    add({"glm4", "chatglm-bpe"}, glm);
  }
  add({"jais-2"},
      make({TANDEM_CONTRACTIONS
            R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re"}));
  // Cased-letter ranges; code points that Unicode normalisation would rewrite (U+1F7D, U+1FBE,
  // U+1FD3, U+1FDB, U+2126 OHM, U+212A KELVIN) are escaped so editors cannot change them.
  add({"deepseek-llm"},
      make({R"re([\r\n])re",
            R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\x{1F7D}ᾀ-ᾴᾶ-ᾼ\x{1FBE}ῂ-ῄῆ-ῌῐ-\x{1FD3}ῖ-\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\x{2126}ℨ\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re",
            R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re", R"re(\s+$)re", R"re([一-龥ࠀ-一가-퟿]+)re",
            R"re(\p{N}+)re"},
           false));
  add({"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
      make({R"re(\p{N}{1,3})re", kCjk,
            kAsciiPunctThenLetters +
                R"re(|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
           false));
  add({"spark2_5"},
      make({R"re(\p{N}{1,3})re", kCjk,
            kAsciiPunctThenLetters +
                R"re(|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re",
            R"re(\p{N})re"},
           false));
  {
    PreTokenizerSpec youtu = make(
        {R"re([가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+)re",
         R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)re" TANDEM_CONTRACTIONS
         R"re(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)re" TANDEM_CONTRACTIONS
         R"re(?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
        false);
    youtu.ignore_merges = true;
    add({"youtu"}, youtu);
  }
  add({"deepseek-coder"}, make({R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re",
                                R"re([一-龥ࠀ-一가-퟿]+)re", R"re(\p{N})re"},
                               false));
  add({"falcon"}, make({R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, "[0-9][0-9][0-9]"}));
  add({"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"},
      make({R"re(\p{N})re", kGpt2}));
  add({"command-r", "smollm"}, make({R"re(\p{N})re", kGpt2}, false));
  add({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
       "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt",
       "olmo", "jais"},
      make({kGpt2}));
  add({"trillion", "granite-docling"}, make({kGpt2}, false));
  add({"stablelm2", "megrez"}, make({kQwen2}));
  add({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"},
      make({kQwen2}, false));
  add({"qwen35"},
      make({TANDEM_CONTRACTIONS
            R"re(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
           false));
  add({"poro-chat"}, make({kFinnish}, false));
  add({"bloom", "gpt3-finnish"}, make({kFinnish}));
  add({"viking"}, make({kFinnish, R"re(\p{N})re"}, false));
  {
    PreTokenizerSpec tekken = make(
        {R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
        false);
    tekken.ignore_merges = true;
    tekken.add_bos = true;
    add({"tekken"}, tekken);
  }
  {
    PreTokenizerSpec chameleon =
        make({"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
              R"re(\p{N})re", R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2},
             false);
    chameleon.add_bos = true;
    add({"chameleon"}, chameleon);
  }
  add({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"},
      make({R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)re" TANDEM_CONTRACTIONS
            R"re(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)re" TANDEM_CONTRACTIONS
            R"re(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
           false));
  {
    PreTokenizerSpec granite = make(
        {R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+)re" TANDEM_CONTRACTIONS
         R"re(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*)re" TANDEM_CONTRACTIONS
         R"re(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
        false);
    granite.ignore_merges = true;
    add({"granite-embed-multi-97m"}, granite);
  }
  add({"tiny_aya", "cohere2moe"},
      make({R"re(\d{1,3}(?=(?:\d{3})*\b))re",
            R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)re" TANDEM_CONTRACTIONS
            R"re(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)re" TANDEM_CONTRACTIONS
            R"re(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
           false));
  add({"superbpe"}, make({R"re(\p{N}+)re", R"re((?=(\d{3})+(?!\d)))re"}, false));
  add({"bailingmoe", "bailingmoe2", "llada-moe"},
      make({R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re"},
           false));
  add({"seed-coder"},
      make({TANDEM_CONTRACTIONS
            R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
           false));
  add({"ufakzeka"},
      make({R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
           false));
  add({"laguna"}, make({R"re([^\n]+|[\n]+)re", kQwen2}, false));
  add({"exaone-moe"},
      make({TANDEM_CONTRACTIONS
            R"re(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re"}));
  {
    PreTokenizerSpec minicpm = make(
        {R"re(\p{N}{1,3})re",
         TANDEM_CONTRACTIONS
         R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"});
    minicpm.ignore_merges = true;
    add({"minicpm5"}, minicpm);
  }
  return table;
}

#undef TANDEM_CONTRACTIONS

const std::vector<NamedSpec>& table() {
  static const std::vector<NamedSpec> kTable = build_table();
  return kTable;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre) {
  if (pre.empty()) pre = "default";
  for (const NamedSpec& entry : table()) {
    for (std::string_view name : entry.names) {
      if (name == pre) return &entry.spec;
    }
  }
  return nullptr;
}

std::string supported_pre_tokenizers() {
  std::string out;
  for (const NamedSpec& entry : table()) {
    for (std::string_view name : entry.names) {
      if (!out.empty()) out += ", ";
      out += name;
    }
  }
  return out;
}

}  // namespace tandem::tokenizer

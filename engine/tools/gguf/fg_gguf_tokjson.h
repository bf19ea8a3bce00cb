
/*
 * fairgate: a Hugging Face tokenizer (tokenizer.json, and optionally
 * tokenizer_config.json) written into a GGUF file's tokenizer.* metadata
 * the way llama.cpp's converter (convert_hf_to_gguf.py) writes it.
 *
 * Two kinds of tokenizer.json are read, both BPE models:
 *
 *   byte-level BPE (Llama 3, Qwen 2 and 3, GPT-2): tokenizer.ggml.model
 *       "gpt2", tokenizer.ggml.pre named from the pre-tokenizer's regular
 *       expression ("llama-bpe", "qwen2", "gpt2"), tokens, types, merges;
 *
 *   SentencePiece BPE with byte fallback (Llama 2, Gemma): "llama", with
 *       scores that order merges as the merge list does (the first merge
 *       that makes a piece gives it its score: SentencePiece's merging by
 *       score then makes the pieces Hugging Face's merge list does), and
 *       add_space_prefix from the normalizer.
 *
 * Token types: added tokens marked special, or that look special
 * ("<|...|>", "<unused...>", "<mask>"), are control tokens; other added
 * tokens are user-defined; "<0xXX>" tokens of a SentencePiece vocabulary
 * are bytes, its unknown token unknown; ids that no token has are
 * "[PADn]", unused.  Unlike the converter, user-defined tokens keep their
 * U+2581 (the converter writes them as spaces): Hugging Face matches them
 * in the text as they are written.
 */

#ifndef _FG_GGUF_TOKJSON_H_INCLUDED_
#define _FG_GGUF_TOKJSON_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_gguf_gen.h"
#include "fg_gguf_write.h"


/*
 * Writes every tokenizer.* entry from tokenizer.json at path (config: the
 * tokenizer_config.json, or NULL) into w.  *n_vocab: the size wanted (0:
 * the tokenizer's own; a larger one is padded with "[PADn]", as the
 * converter pads to config.json's vocab_size, Qwen's 151,936 for one); it
 * gets the size written.  0, or -1 with the file, key and reason in err.
 */
int fg_gguf_tokjson_write(fg_gguf_writer_t *w, const char *path,
    const char *config, uint32_t *n_vocab, char *err, size_t errlen);

/* the same for the generator: c->tokenizer_json and c->tokenizer_config */
int fg_gguf_tokjson_gen(const fg_gguf_gen_conf_t *c, fg_gguf_writer_t *w,
    uint32_t *n_vocab, char *err, size_t errlen);


#endif /* _FG_GGUF_TOKJSON_H_INCLUDED_ */

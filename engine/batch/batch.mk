# engine/batch/: continuous batching over one backend and its KV cache
# (fg_batch.c), its schedulers (FCFS there; Andes's QoE order applied in
# fg_batch_andes.c, decided in fg_sched_andes.c, which the simulator
# shares), swapping preempted sequences out to host memory
# (fg_batch_swap.c), token sampling (fg_sample.c; the logits'
# adjustments and log-probabilities, fg_sample_adjust.c) and a sequence's
# grammar masking its logits (fg_batch_gram.c) or, for an embedding, the
# prompt's pooled hidden state (fg_batch_embed.c), and the prompt's
# log-probabilities for echo (fg_batch_plp.c), libfgbatch.a.  It calls
# kv, the backend's interface, the kernels' sampler, the protocol's block
# hash (shm) and the grammars' matcher (grammar); what serves it reads its
# events through a callback.

FG_BATCH_SRCS := engine/batch/fg_batch.c engine/batch/fg_batch_andes.c \
                 engine/batch/fg_batch_seq.c \
                 engine/batch/fg_batch_gram.c \
                 engine/batch/fg_batch_swap.c \
                 engine/batch/fg_batch_embed.c \
                 engine/batch/fg_batch_plp.c \
                 engine/batch/fg_batch_stats.c \
                 engine/batch/fg_sched_andes.c engine/batch/fg_sample.c \
                 engine/batch/fg_sample_adjust.c
FG_BATCH_INC  := -Iengine/batch $(FG_KV_INC) $(FG_SHM_INC) \
                 $(FG_KERNELS_INC) $(FG_GRAMMAR_INC)

# what links libfgbatch.a links these after it
FG_BATCH_LINK := $(BUILD)/libfgbatch.a $(BUILD)/libfgshm.a \
                 $(BUILD)/libfggrammar.a $(FG_KV_LINK)
FG_BATCH_LIBS := $(FG_KV_LIBS) $(FG_GRAMMAR_LIBS)

$(BUILD)/obj/engine/batch/%.o: FG_INC := $(FG_BATCH_INC)

$(eval $(call fg_lib,batch,$(FG_BATCH_SRCS)))

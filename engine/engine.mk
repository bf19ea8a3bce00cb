# engine/: fairgate-engine and the engine-side models shared with tools.

FG_ENGINE_SRCS := engine/fg_step_model.c
FG_ENGINE_OBJS := $(FG_ENGINE_SRCS:%.c=$(BUILD)/obj/%.o)

; The calls of the cpu backend (oneDNN 2.7, src/runtime/backend_cpu.c):
; what each covers and when it may be made. A call is a block from
; ";; @call NAME" to the next one: its header lines, then constraints in
; SMT-LIB over the properties of properties.smt2 (see data/library/README.md).
;; @library onednn
;; properties: properties.smt2

;; @call conv
;; covers: conv2d
;; layouts: nchw blocked nhwc
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))

;; @call conv_act
;; covers: conv2d + relu
;; covers: conv2d + clip
;; layouts: nchw blocked nhwc
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))

;; @call conv_bias
;; covers: conv2d + bias
;; layouts: nchw blocked nhwc
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))

;; @call conv_bias_act
;; covers: conv2d + bias + relu
;; covers: conv2d + bias + clip
;; layouts: nchw blocked nhwc
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))

; A residual sum is oneDNN's sum post-op: it adds what the destination
; holds, so the summand is copied there first, unless the destination is
; the summand's own buffer (the in-place variant below).
;; @call conv_sum
;; covers: conv2d + sum
;; covers: conv2d + bias + sum
;; covers: conv2d + sum + relu
;; covers: conv2d + bias + sum + relu
;; covers: conv2d + sum + clip
;; covers: conv2d + bias + sum + clip
;; layouts: nchw blocked nhwc
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))

;; @call conv_sum_in_place
;; covers: conv2d + sum
;; covers: conv2d + bias + sum
;; covers: conv2d + sum + relu
;; covers: conv2d + bias + sum + relu
;; covers: conv2d + sum + clip
;; covers: conv2d + bias + sum + clip
;; layouts: nchw blocked nhwc
;; writes: summand
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))
(assert (not overwritten_read_later))
(assert (not overwritten_is_input))
(assert (not overwritten_read_twice))
(assert overwritten_same_size)

; Matmul's epilogue: bias (one value per column), sum and ReLU or clip as post-ops.
;; @call matmul
;; covers: matmul
;; covers: matmul + relu
;; covers: matmul + bias
;; covers: matmul + bias + relu
;; covers: matmul + sum
;; covers: matmul + bias + sum
;; covers: matmul + sum + relu
;; covers: matmul + bias + sum + relu
;; covers: matmul + clip
;; covers: matmul + bias + clip
;; covers: matmul + sum + clip
;; covers: matmul + bias + sum + clip
;; layouts: nchw
(assert (= dtype F32))
(assert (>= rank 2))

;; @call matmul_sum_in_place
;; covers: matmul + sum
;; covers: matmul + bias + sum
;; covers: matmul + sum + relu
;; covers: matmul + bias + sum + relu
;; covers: matmul + sum + clip
;; covers: matmul + bias + sum + clip
;; layouts: nchw
;; writes: summand
(assert (= dtype F32))
(assert (>= rank 2))
(assert (not overwritten_read_later))
(assert (not overwritten_is_input))
(assert (not overwritten_read_twice))
(assert overwritten_same_size)

; Element-wise activations in place: oneDNN's eltwise takes its source as
; its destination.
;; @call eltwise_in_place
;; covers: relu sigmoid tanh clip
;; layouts: nchw nhwc
;; writes: operand
(assert (= dtype F32))
(assert (not overwritten_read_later))
(assert (not overwritten_is_input))
(assert (not overwritten_read_twice))
(assert overwritten_same_size)

; A concat along an axis with only 1s before it, in row-major buffers: each
; operand's slice of the result is one block, which its producer writes
; (any oneDNN primitive takes a destination pointer), so the concat copies
; nothing. Alignment: oneDNN takes any float-aligned pointer.
;; @call concat_placed
;; covers: concat
;; layouts: nchw blocked
;; writes: producers
(assert (= dtype F32))
(assert (= outer 1))
(assert (>= slice_align 4))
(assert producers_own)
(assert (not placed_overwritten))

; Every operator alone, into a buffer of its own: the plain plan's call.
;; @call op
;; covers: *
;; layouts: nchw nhwc
(assert (= dtype F32))

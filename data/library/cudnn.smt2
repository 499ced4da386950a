; The calls of the gpu backend (cuDNN 9 and cuBLAS, src/runtime/gpu):
; what each covers and when it may be made (see data/library/README.md).
;; @library cudnn
;; properties: properties.smt2

; cudnnConvolutionBiasActivationForward computes act(conv + bias + z):
; one call for every epilogue, identity or ReLU. cuDNN has no blocked
; format of its own to choose here (NCHW or NHWC buffers).
;; @call conv_bias_act
;; covers: conv2d
;; covers: conv2d + relu
;; covers: conv2d + bias
;; covers: conv2d + bias + relu
;; covers: conv2d + sum
;; covers: conv2d + bias + sum
;; covers: conv2d + sum + relu
;; covers: conv2d + bias + sum + relu
;; covers: conv2d + clip
;; covers: conv2d + bias + clip
;; covers: conv2d + sum + clip
;; covers: conv2d + bias + sum + clip
;; layouts: nchw nhwc
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))

; z may alias y in cuDNN's fused call: the residual written in place.
;; @call conv_bias_act_in_place
;; covers: conv2d + sum
;; covers: conv2d + bias + sum
;; covers: conv2d + sum + relu
;; covers: conv2d + bias + sum + relu
;; covers: conv2d + sum + clip
;; covers: conv2d + bias + sum + clip
;; layouts: nchw nhwc
;; writes: summand
(assert (= dtype F32))
(assert (and (>= groups 1) (= (mod channels_in groups) 0) (= (mod channels_out groups) 0)))
(assert (not overwritten_read_later))
(assert (not overwritten_is_input))
(assert (not overwritten_read_twice))
(assert overwritten_same_size)

; cuBLAS GEMM, its epilogue (bias, sum, ReLU) in one kernel of ours after it.
;; @call gemm
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

; cudnnActivationForward allows its source as its destination.
;; @call activation_in_place
;; covers: relu sigmoid tanh clip
;; layouts: nchw nhwc
;; writes: operand
(assert (= dtype F32))
(assert (not overwritten_read_later))
(assert (not overwritten_is_input))
(assert (not overwritten_read_twice))
(assert overwritten_same_size)

; The same placing on the GPU: cuDNN and cuBLAS write any device pointer,
; but their vectorized kernels (and tensor cores) want 16-byte alignment,
; so a slice must start on one.
;; @call concat_placed
;; covers: concat
;; layouts: nchw
;; writes: producers
(assert (= dtype F32))
(assert (= outer 1))
(assert (>= slice_align 16))
(assert producers_own)
(assert (not placed_overwritten))

;; @call op
;; covers: *
;; layouts: nchw nhwc
(assert (= dtype F32))

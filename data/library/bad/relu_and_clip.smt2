; Known bad: one pattern that ends with two activations.
;; @library two_activations
;; properties: ../properties.smt2
;; @call conv_relu_clip
;; covers: conv2d + relu + clip
;; layouts: nchw
(assert (= dtype F32))

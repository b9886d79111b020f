"""The documentation of convolution, pooling and padding (dsl/runtime/builtins/conv.py), in the form of
dsl/runtime/builtins/docs.py, which merges it."""

NAMES = ["conv", "conv_transpose", "max_pool", "avg_pool", "pad"]

DOCS = {
    "conv": """conv(x, w, stride=1, padding="valid", dilation=1, groups=1): the convolution of x, of shape
(N, C_in, *spatial) over 1, 2 or 3 spatial axes, with the kernel w of shape (C_out, C_in / groups,
*kernel): PyTorch's conv1d/conv2d/conv3d and lax.conv's default layout, a cross-correlation (the
kernel is not flipped). An x without the N axis gives a result without it. stride and dilation are
an int or one per spatial axis; padding is "valid" (none), "same" (ceil(size / stride) outputs, the
odd padding after, as lax.conv and TensorFlow), an int or one per axis (both sides, as PyTorch), or a
(before, after) pair per axis; groups splits the channels into independent convolutions. Each
output size is (size + padding - dilation * (k - 1) - 1) // stride + 1.
Differentiable: yes, in x and w, to every order.
>>> conv([[[1.0, 2.0, 3.0, 4.0]]], [[[1.0, -1.0]]])
[[[-1.0, -1.0, -1.0]]]""",
    "conv_transpose": """conv_transpose(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1): the
transposed convolution (the gradient of conv with respect to its input), as PyTorch's
conv_transpose1d/2d/3d: x of shape (N, C_in, *spatial) and w of shape (C_in, C_out / groups, *kernel);
each output size is (size - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
padding is "valid" (0), an int or one per axis, or a (before, after) pair per axis (taken off the
full result); output_padding (smaller than the stride or the dilation) adds rows after.
Differentiable: yes, in x and w, to every order.
>>> conv_transpose([[[1.0, 2.0]]], [[[1.0, 1.0, 1.0]]], stride=2)
[[[1.0, 1.0, 3.0, 2.0, 2.0]]]""",
    "max_pool": """max_pool(x, window, stride=window, padding="valid"): the largest entry of each window over
the trailing spatial axes of x (N, C, *spatial): window and stride an int (for every axis after
the first two) or one per spatial axis; padding as conv's ("valid", "same", ints or pairs, each
smaller than the window), padded entries never chosen.
Differentiable: yes: the gradient goes to the largest entry of each window, shared equally by
ties (as max's).
>>> max_pool([[[1.0, 3.0, 2.0, 5.0]]], 2)
[[[3.0, 5.0]]]""",
    "avg_pool": """avg_pool(x, window, stride=window, padding="valid"): the mean of each window over the
trailing spatial axes of x (N, C, *spatial), arguments as max_pool's; padded entries count as
zeros in the mean (PyTorch's count_include_pad and flax's default).
Differentiable: yes.
>>> avg_pool([[[1.0, 3.0, 2.0, 5.0]]], 2)
[[[2.0, 3.5]]]""",
    "pad": """pad(x, pad_width, mode="constant", constant_values=0): x with entries added before and after
each axis, as numpy.pad: pad_width an int (every side), a (before, after) pair (every axis) or one
pair per axis; mode "constant" (constant_values), "edge", "reflect", "symmetric" or "wrap". The
result has x's dtype; an int or bool x padded with a constant that is not a whole number becomes
float64 (numpy would cut the fraction off).
Differentiable: yes, in x (the padding's gradient is dropped, or added to the entries it copies).
>>> pad([1.0, 2.0], (1, 2))
[0.0, 1.0, 2.0, 0.0, 0.0]""",
}

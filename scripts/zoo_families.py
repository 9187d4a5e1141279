"""Network families of the loom model zoo (scripts/zoo.py).

One builder per common family, each written the way PyTorch's exporter writes
the torchvision (or timm / nn.Transformer) model at opset 17: batch norm that
follows a convolution folded into its weight and bias, nn.Linear on a 2-D
input as Gemm(transB=1) and on a 3-D/4-D input as MatMul + Add, SiLU as
x * Sigmoid(x), GELU as 0.5 * x * (1 + Erf(x / sqrt(2))), HardSwish and
HardSigmoid(alpha=1/6) as ONNX ops, chunk/unbind as Split with a `split`
input. Every family has two slices:

  small  a reduced network (few blocks, small width, 32x32 to 64x64 input
         or 16 tokens) that quantizes and runs in a second or two;
  full   the real architecture's size at 224x224 (the encoder: 128 tokens),
         batch 1.

The builders take zoo.py's Net class as an argument (this module does not
import zoo.py) and return a float onnx.ModelProto; zoo.py quantizes it.
"""
import math

SLICES = ("small", "full")
# Weight gains (x He-normal). A conv's gain keeps the mean square of the
# activations about constant through the activation that follows it: ReLU
# passes half of a normal input's energy, no activation all of it. SiLU and
# HardSwish pass a quarter of a small input's energy and half of a large
# one's, so without batch statistics a deep stack of them either settles in
# the small, nearly linear range or grows without bound; their gains (with
# SE_GAIN) are the largest that keep EfficientNet-B0 and MobileNetV3-Large
# at 224x224 from growing for seeds 1 to 16 (logits within +-1.5).
ACT_GAIN = {"relu": 1.0, "silu": 1.1, "hswish": 1.0, None: math.sqrt(0.5)}


def _make_divisible(v, divisor=8):
    """torchvision's channel rounding (MobileNet, EfficientNet)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


# What an inverted residual's linear projection makes up for after a
# squeeze-excite gate (a gate near 0.5 passes about half the root mean
# square); set together with ACT_GAIN.
SE_GAIN = {"sigmoid": 1.6, "hsigmoid": 1.4}


def _project_gain(gate, residual):
    """Gain of an inverted residual's linear 1x1 projection: keeps the mean
    square of the block's input (undoing a squeeze-excite `gate`, None
    without one), half of it on a residual branch."""
    return ACT_GAIN[None] * (SE_GAIN[gate] if gate else 1.0) * (0.5 if residual else 1.0)


class _Layers:
    """Layers added to zoo.Net for the families (mixed in by _net)."""

    def multi(self, op, inputs, n_out, base=None, **attrs):
        """A node with several outputs (Split); returns their names."""
        from onnx import helper

        name = self.name(base or op.lower())
        outs = ["%s_%d" % (name, i) for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs

    def i64(self, v):
        return self.const("shape", self.np.array(v, self.np.int64))

    def f32(self, base, v):
        return self.const(base, self.np.array(v, self.np.float32))

    def cv(self, x, cin, cout, k, stride=1, group=1, gain=1.0, pad=None, dilation=1, bias=True):
        """Conv as PyTorch exports it (all five attributes written); `bias`
        False for a convolution without bias that no batch norm follows."""
        w = self.weight("w", (cout, cin // group, k, k), (cin // group) * k * k, gain)
        ins = [x, w]
        if bias:
            ins.append(self.bias("b", cout))
        p = dilation * (k // 2) if pad is None else pad
        return self.node("Conv", ins, "conv", dilations=[dilation, dilation], group=group, kernel_shape=[k, k],
                         pads=[p, p, p, p], strides=[stride, stride])

    def act(self, x, kind):
        if kind is None:
            return x
        if kind == "relu":
            return self.node("Relu", [x])
        if kind == "silu":  # x * sigmoid(x)
            return self.node("Mul", [x, self.node("Sigmoid", [x])], "silu")
        if kind == "hswish":
            return self.node("HardSwish", [x], "hardswish")
        if kind == "hsigmoid":
            return self.node("HardSigmoid", [x], "hardsigmoid", alpha=1.0 / 6.0)
        if kind == "sigmoid":
            return self.node("Sigmoid", [x])
        raise ValueError(kind)

    def cna(self, x, cin, cout, k, stride=1, group=1, act="relu", gain=None, dilation=1):
        """Conv2dNormActivation: conv + folded batch norm + activation, by
        default with the activation's gain (ACT_GAIN)."""
        if gain is None:
            gain = ACT_GAIN[act]
        return self.act(self.cv(x, cin, cout, k, stride, group, gain, dilation=dilation), act)

    def bn(self, x, c):
        """A batch norm no convolution precedes (nothing to fold it into)."""
        np, rng = self.np, self.rng
        scale = self.const("bn_scale", (1.0 + 0.1 * rng.standard_normal(c)).astype(np.float32))
        shift = self.const("bn_bias", (0.05 * rng.standard_normal(c)).astype(np.float32))
        mean = self.const("bn_mean", (0.1 * rng.standard_normal(c)).astype(np.float32))
        var = self.const("bn_var", rng.uniform(0.5, 1.5, c).astype(np.float32))
        return self.node("BatchNormalization", [x, scale, shift, mean, var], "batchnorm", epsilon=1e-5,
                         momentum=0.9)

    def ln(self, x, c, eps=1e-5):
        np, rng = self.np, self.rng
        g = self.const("ln_g", (1.0 + 0.05 * rng.standard_normal(c)).astype(np.float32))
        b = self.const("ln_b", (0.05 * rng.standard_normal(c)).astype(np.float32))
        return self.node("LayerNormalization", [x, g, b], "layernorm", axis=-1, epsilon=eps)

    def gelu(self, x):
        """GELU (approximate='none') as the opset 17 export writes it."""
        np = self.np
        e = self.node("Erf", [self.node("Div", [x, self.const("sqrt2", np.array(math.sqrt(2.0), np.float32))])])
        e = self.node("Add", [e, self.const("one", np.array(1.0, np.float32))])
        return self.node("Mul", [self.node("Mul", [x, e]), self.const("half", np.array(0.5, np.float32))], "gelu")

    def gemm(self, x, fin, fout, gain=1.0):
        """nn.Linear on a [N, fin] input: Gemm(transB=1)."""
        w = self.weight("fc_w", (fout, fin), fin, gain)
        b = self.bias("fc_b", fout)
        return self.node("Gemm", [x, w, b], "fc", alpha=1.0, beta=1.0, transB=1)

    def se(self, x, c, squeeze, act="relu", gate="sigmoid"):
        """torchvision SqueezeExcitation: GlobalAveragePool, 1x1 conv, act,
        1x1 conv, gate, then the [1,C,1,1] scale times the [1,C,H,W] input."""
        s = self.node("GlobalAveragePool", [x], "gap")
        s = self.act(self.cv(s, c, squeeze, 1), act)
        s = self.act(self.cv(s, squeeze, c, 1), gate)
        return self.node("Mul", [s, x], "se_mul")

    def maxpool(self, x, k, s, p=0, ceil=0):
        return self.node("MaxPool", [x], "maxpool", ceil_mode=ceil, dilations=[1, 1], kernel_shape=[k, k],
                         pads=[p, p, p, p], strides=[s, s])

    def classifier(self, x, cin, classes=1000):
        """AdaptiveAvgPool2d(1), flatten, Linear."""
        x = self.node("GlobalAveragePool", [x], "gap")
        x = self.node("Flatten", [x], "flatten", axis=1)
        return self.gemm(x, cin, classes)


_CLASSES = {}


def _net(Net, seed, shapes_only):
    cls = _CLASSES.get(Net)
    if cls is None:
        cls = _CLASSES[Net] = type("FamilyNet", (_Layers, Net), {})
    return cls(seed, shapes_only)


def _name(family, slice_):
    return family if slice_ == "full" else family + "_" + slice_


def _image(full, small, slice_):
    return [1, 3, full, full] if slice_ == "full" else [1, 3, small, small]


def _conv_out(h, k, s, p, ceil=False):
    span = h + 2 * p - k
    return (-(-span // s) if ceil else span // s) + 1


# --------------------------------------------------------------------------
# ResNeXt


def resnext(Net, seed, slice_, shapes_only):
    """ResNeXt-50 32x4d: ResNet-50 v1.5 bottlenecks whose 3x3 is a grouped
    convolution (32 groups of width/32), width = 2 x the ResNet-50 width."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    groups, base_width = 32, 4
    stages = [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)] if slice_ == "full" else [(64, 1, 1), (128, 1, 2)]
    x = net.cna("input", 3, 64, 7, stride=2)
    x = net.maxpool(x, 3, 2, 1)
    cin = 64
    for planes, blocks, stride in stages:
        width = planes * base_width // 64 * groups
        cout = planes * 4
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            y = net.cna(x, cin, width, 1)
            y = net.cna(y, width, width, 3, stride=s, group=groups)
            y = net.cv(y, width, cout, 1, gain=0.25)  # residual branch starts small
            sc = net.cv(x, cin, cout, 1, stride=s) if (s != 1 or cin != cout) else x
            x = net.relu(net.node("Add", [y, sc], "add"))
            cin = cout
    x = net.classifier(x, cin)
    return net.model(_name("resnext", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# RegNetY


REGNET_Y_400MF = ((1, 48), (3, 104), (6, 208), (6, 440))  # (depth, width) of the four stages


def regnet(Net, seed, slice_, shapes_only):
    """RegNetY-400MF (torchvision): 3x3/2 stem to 32, four stages of
    ResBottleneckBlocks (1x1, grouped 3x3 with group width 8, squeeze-excite
    with ReLU and Sigmoid at a quarter of the block's input width, 1x1;
    projection shortcut on each stage's first, stride-2 block)."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    stages = REGNET_Y_400MF if slice_ == "full" else ((1, 48), (2, 104))
    group_width, se_ratio = 8, 0.25
    x = net.cna("input", 3, 32, 3, stride=2)
    cin = 32
    for depth, width in stages:
        for bi in range(depth):
            s = 2 if bi == 0 else 1
            wb = width  # bottleneck multiplier 1
            y = net.cna(x, cin, wb, 1)
            y = net.cna(y, wb, wb, 3, stride=s, group=wb // group_width)
            y = net.se(y, wb, int(round(se_ratio * cin)))
            y = net.cv(y, wb, width, 1, gain=0.25)
            sc = net.cv(x, cin, width, 1, stride=s) if (s != 1 or cin != width) else x
            x = net.relu(net.node("Add", [sc, y], "add"))
            cin = width
    x = net.classifier(x, cin)
    return net.model(_name("regnet", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# EfficientNet


EFFICIENTNET_B0 = [  # expand ratio, kernel, stride, in, out, layers
    (1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]


def efficientnet(Net, seed, slice_, shapes_only):
    """EfficientNet-B0 (torchvision): 3x3/2 stem, 16 MBConv blocks (1x1
    expansion, depthwise 3x3 or 5x5, squeeze-excite to a quarter of the
    block's input channels with SiLU and Sigmoid, linear 1x1 projection,
    residual Add), SiLU as x * Sigmoid(x), 1x1 to 1280, pool, Linear."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    if slice_ == "full":
        settings, head = EFFICIENTNET_B0, 1280
    else:
        settings, head = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 1)], 320
    x = net.cna("input", 3, 32, 3, stride=2, act="silu")
    cin = 32
    for t, k, s, _, c, n in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x
            if t != 1:
                y = net.cna(y, cin, hidden, 1, act="silu")
            y = net.cna(y, hidden, hidden, k, stride=stride, group=hidden, act="silu")
            y = net.se(y, hidden, max(1, cin // 4), act="silu", gate="sigmoid")
            residual = stride == 1 and cin == c
            y = net.cv(y, hidden, c, 1, gain=_project_gain("sigmoid", residual))
            if residual:
                y = net.node("Add", [y, x], "add")
            x, cin = y, c
    x = net.cna(x, cin, head, 1, act="silu")
    x = net.classifier(x, head)
    return net.model(_name("efficientnet", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# MobileNetV3


MOBILENET_V3_LARGE = [  # in, kernel, expanded, out, SE, activation, stride
    (16, 3, 16, 16, False, "relu", 1), (16, 3, 64, 24, False, "relu", 2), (24, 3, 72, 24, False, "relu", 1),
    (24, 5, 72, 40, True, "relu", 2), (40, 5, 120, 40, True, "relu", 1), (40, 5, 120, 40, True, "relu", 1),
    (40, 3, 240, 80, False, "hswish", 2), (80, 3, 200, 80, False, "hswish", 1),
    (80, 3, 184, 80, False, "hswish", 1), (80, 3, 184, 80, False, "hswish", 1),
    (80, 3, 480, 112, True, "hswish", 1), (112, 3, 672, 112, True, "hswish", 1),
    (112, 5, 672, 160, True, "hswish", 2), (160, 5, 960, 160, True, "hswish", 1),
    (160, 5, 960, 160, True, "hswish", 1)]
# The small slice's blocks (indices into MOBILENET_V3_LARGE): no expansion,
# stride 2, SE with a residual, HardSwish with stride 2, SE with HardSwish.
MOBILENET_V3_SMALL_SLICE = (0, 1, 3, 4, 6, 10)


def _mnv3_block(net, x, cfg, dilation=1):
    cin, k, exp, cout, use_se, act, stride = cfg
    if dilation > 1:
        stride = 1  # torchvision's dilated tail: stride 1, dilation 2
    y = x
    if exp != cin:
        y = net.cna(y, cin, exp, 1, act=act)
    y = net.cna(y, exp, exp, k, stride=stride, group=exp, act=act, dilation=dilation)
    if use_se:
        y = net.se(y, exp, _make_divisible(exp // 4), act="relu", gate="hsigmoid")
    residual = stride == 1 and cin == cout
    y = net.cv(y, exp, cout, 1, gain=_project_gain("hsigmoid" if use_se else None, residual))
    if residual:
        y = net.node("Add", [y, x], "add")
    return y


def _mnv3_backbone(net, slice_, dilated=False, tap=None):
    """Stem, inverted residuals and the last 1x1 conv (HardSwish). Returns
    (output, channels, tapped output or None). `tap`: index of the block
    whose output is also returned; `dilated`: the last three blocks at
    stride 1 with dilation 2 (torchvision's segmentation backbone)."""
    x = net.cna("input", 3, 16, 3, stride=2, act="hswish")
    blocks = list(range(len(MOBILENET_V3_LARGE))) if slice_ == "full" else list(MOBILENET_V3_SMALL_SLICE)
    tapped = None
    for i in blocks:
        cfg = MOBILENET_V3_LARGE[i]
        x = _mnv3_block(net, x, cfg, dilation=2 if (dilated and i >= 12) else 1)
        if i == tap:
            tapped = x
    last = 6 * cfg[3]
    x = net.cna(x, cfg[3], last, 1, act="hswish")
    return x, last, tapped


def mobilenetv3(Net, seed, slice_, shapes_only):
    """MobileNetV3-Large 1.0 (torchvision): 3x3/2 stem, 15 inverted
    residuals (depthwise 3x3/5x5, ReLU or HardSwish, squeeze-excite with ReLU
    and HardSigmoid(alpha=1/6)), 1x1 to 960, pool, Linear 1280, HardSwish,
    Linear."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    x, c, _ = _mnv3_backbone(net, slice_)
    hidden = 1280 if slice_ == "full" else 512
    x = net.node("GlobalAveragePool", [x], "gap")
    x = net.node("Flatten", [x], "flatten", axis=1)
    x = net.act(net.gemm(x, c, hidden), "hswish")
    x = net.gemm(x, hidden, 1000)
    return net.model(_name("mobilenetv3", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# SqueezeNet


SQUEEZENET_1_1 = [  # "M" a 3x3/2 max pool, else (squeeze, expand 1x1, expand 3x3)
    "M", (16, 64, 64), (16, 64, 64), "M", (32, 128, 128), (32, 128, 128), "M", (48, 192, 192), (48, 192, 192),
    (64, 256, 256), (64, 256, 256)]


def squeezenet(Net, seed, slice_, shapes_only):
    """SqueezeNet 1.1 (torchvision): 3x3/2 conv to 64, 8 fire modules
    (squeeze 1x1, expand 1x1 and 3x3, Concat on channels) between 3x3/2 max
    pools (ceil_mode 0), 1x1 conv to 1000 classes, ReLU, global pool. No
    batch norm; every conv has a bias."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    cfg = SQUEEZENET_1_1 if slice_ == "full" else SQUEEZENET_1_1[:6]
    x = net.relu(net.cv("input", 3, 64, 3, stride=2, pad=0))
    cin = 64
    for f in cfg:
        if f == "M":
            x = net.maxpool(x, 3, 2, 0, ceil=0)
            continue
        sq, e1, e3 = f
        s = net.relu(net.cv(x, cin, sq, 1))
        a = net.relu(net.cv(s, sq, e1, 1))
        b = net.relu(net.cv(s, sq, e3, 3))
        x = net.node("Concat", [a, b], "concat", axis=1)
        cin = e1 + e3
    x = net.relu(net.cv(x, cin, 1000, 1, gain=0.5))
    x = net.node("GlobalAveragePool", [x], "gap")
    x = net.node("Flatten", [x], "flatten", axis=1)
    return net.model(_name("squeezenet", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# GoogLeNet


GOOGLENET = [  # "M" a 3x3/2 max pool (ceil), "M2" 2x2/2; else (1x1, 3x3 reduce, 3x3, 3x3 reduce, 3x3, pool proj)
    (64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "M", (192, 96, 208, 16, 48, 64),
    (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64),
    (256, 160, 320, 32, 128, 128), "M2", (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]


def googlenet(Net, seed, slice_, shapes_only):
    """GoogLeNet / Inception v1 (torchvision, no auxiliary heads): 7x7/2
    conv, max pool, 1x1 and 3x3 convs, 9 inception modules of four branches
    (1x1; 1x1 -> 3x3; 1x1 -> 3x3; 3x3/1 max pool -> 1x1) joined by Concat on
    channels, max pools with ceil_mode 1 as torchvision has them, pool,
    Linear."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    cfg = GOOGLENET if slice_ == "full" else GOOGLENET[:4]
    x = net.cna("input", 3, 64, 7, stride=2)
    x = net.maxpool(x, 3, 2, 0, ceil=1)
    x = net.cna(x, 64, 64, 1)
    x = net.cna(x, 64, 192, 3)
    x = net.maxpool(x, 3, 2, 0, ceil=1)
    cin = 192
    for m in cfg:
        if m == "M":
            x = net.maxpool(x, 3, 2, 0, ceil=1)
            continue
        if m == "M2":
            x = net.maxpool(x, 2, 2, 0, ceil=1)
            continue
        c1, r3, c3, r5, c5, pp = m
        b1 = net.cna(x, cin, c1, 1)
        b2 = net.cna(net.cna(x, cin, r3, 1), r3, c3, 3)
        b3 = net.cna(net.cna(x, cin, r5, 1), r5, c5, 3)
        b4 = net.cna(net.maxpool(x, 3, 1, 1, ceil=1), cin, pp, 1)
        x = net.node("Concat", [b1, b2, b3, b4], "concat", axis=1)
        cin = c1 + c3 + c5 + pp
    x = net.classifier(x, cin)
    return net.model(_name("googlenet", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# DenseNet


def densenet(Net, seed, slice_, shapes_only):
    """DenseNet-121 (torchvision): 7x7/2 conv (its batch norm folded), ReLU,
    3x3/2 max pool, dense blocks of 6, 12, 24, 16 layers (BatchNormalization
    -> ReLU -> 1x1 conv to 128 (the second batch norm folded) -> ReLU -> 3x3
    conv to 32 without bias, Concat with the layer's input), transitions
    (BatchNormalization -> ReLU -> 1x1 conv halving the channels -> 2x2/2
    AveragePool), final BatchNormalization, ReLU, pool, Linear. The batch
    norms that no convolution precedes stay BatchNormalization nodes."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    growth, bn_size = 32, 4
    blocks = (6, 12, 24, 16) if slice_ == "full" else (2, 2)
    x = net.cna("input", 3, 64, 7, stride=2)
    x = net.maxpool(x, 3, 2, 1)
    c = 64
    for bi, n in enumerate(blocks):
        for _ in range(n):
            y = net.relu(net.bn(x, c))
            y = net.cna(y, c, bn_size * growth, 1)
            y = net.cv(y, bn_size * growth, growth, 3, bias=False)
            x = net.node("Concat", [x, y], "concat", axis=1)
            c += growth
        if bi != len(blocks) - 1:
            y = net.relu(net.bn(x, c))
            y = net.cv(y, c, c // 2, 1, bias=False)
            x = net.node("AveragePool", [y], "avgpool", ceil_mode=0, count_include_pad=1, kernel_shape=[2, 2],
                         pads=[0, 0, 0, 0], strides=[2, 2])
            c //= 2
    x = net.relu(net.bn(x, c))
    x = net.classifier(x, c)
    return net.model(_name("densenet", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# ShuffleNetV2


def shufflenet(Net, seed, slice_, shapes_only):
    """ShuffleNetV2 x1.0 (torchvision): 3x3/2 conv to 24, 3x3/2 max pool,
    stages of 4, 8, 4 units (116, 232, 464 channels; the first unit of a
    stage has two stride-2 branches, the others Split the channels in two
    halves and transform one), channel shuffle as Reshape [1,2,C/2,H,W] ->
    Transpose [0,2,1,3,4] -> Reshape [1,C,H,W], 1x1 conv to 1024, mean over
    H and W (ReduceMean, keepdims 0), Linear."""
    net = _net(Net, seed, shapes_only)
    in_shape = _image(224, 64, slice_)
    if slice_ == "full":
        repeats, chans, last = (4, 8, 4), (116, 232, 464), 1024
    else:
        repeats, chans, last = (2, 2), (48, 96), 256
    hw = in_shape[2]
    x = net.cna("input", 3, 24, 3, stride=2)
    hw = _conv_out(hw, 3, 2, 1)
    x = net.maxpool(x, 3, 2, 1)
    hw = _conv_out(hw, 3, 2, 1)
    cin = 24

    def branch2(t, ci, bf, stride):
        t = net.cna(t, ci, bf, 1)
        t = net.cna(t, bf, bf, 3, stride=stride, group=bf, act=None)
        return net.cna(t, bf, bf, 1)

    for n, oup in zip(repeats, chans):
        bf = oup // 2
        for i in range(n):
            if i == 0:
                b1 = net.cna(x, cin, cin, 3, stride=2, group=cin, act=None)
                b1 = net.cna(b1, cin, bf, 1)
                b2 = branch2(x, cin, bf, 2)
                hw = _conv_out(hw, 3, 2, 1)
            else:
                x1, x2 = net.multi("Split", [x, net.i64([bf, bf])], 2, "split", axis=1)
                b1, b2 = x1, branch2(x2, bf, bf, 1)
            x = net.node("Concat", [b1, b2], "concat", axis=1)
            x = net.node("Reshape", [x, net.i64([1, 2, bf, hw, hw])], "reshape")
            x = net.node("Transpose", [x], "transpose", perm=[0, 2, 1, 3, 4])
            x = net.node("Reshape", [x, net.i64([1, oup, hw, hw])], "reshape")
            cin = oup
    x = net.cna(x, cin, last, 1)
    x = net.node("ReduceMean", [x], "reducemean", axes=[2, 3], keepdims=0)
    x = net.gemm(x, last, 1000)
    return net.model(_name("shufflenet", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# ConvNeXt


def convnext(Net, seed, slice_, shapes_only):
    """ConvNeXt-T: 4x4/4 stem conv + LayerNorm, stages of 3, 3, 9, 3 blocks
    (96, 192, 384, 768 channels): depthwise 7x7, Transpose to NHWC,
    LayerNormalization (eps 1e-6), Linear to 4C (MatMul + Add), GELU (Erf),
    Linear back, layer scale Mul by a [C] constant, Transpose to NCHW,
    residual Add; downsampling LayerNorm + 2x2/2 conv; pool, LayerNorm,
    Linear."""
    net = _net(Net, seed, shapes_only)
    np = net.np
    in_shape = _image(224, 64, slice_)
    if slice_ == "full":
        depths, dims = (3, 3, 9, 3), (96, 192, 384, 768)
    else:
        depths, dims = (2, 2), (32, 64)

    def ln2d(t, c):  # LayerNorm2d: permute to NHWC, layer norm, permute back
        t = net.node("Transpose", [t], "transpose", perm=[0, 2, 3, 1])
        t = net.ln(t, c, 1e-6)
        return net.node("Transpose", [t], "transpose", perm=[0, 3, 1, 2])

    x = ln2d(net.cv("input", 3, dims[0], 4, stride=4, pad=0), dims[0])
    for si, (n, c) in enumerate(zip(depths, dims)):
        if si > 0:
            x = net.cv(ln2d(x, dims[si - 1]), dims[si - 1], c, 2, stride=2, pad=0)
        for _ in range(n):
            y = net.cv(x, c, c, 7, group=c)
            y = net.node("Transpose", [y], "transpose", perm=[0, 2, 3, 1])
            y = net.ln(y, c, 1e-6)
            y = net.gelu(net.linear(y, c, 4 * c))
            y = net.linear(y, 4 * c, c)
            gamma = net.const("layer_scale", net.rng.uniform(0.1, 0.3, c).astype(np.float32))
            y = net.node("Mul", [y, gamma], "layer_scale")
            y = net.node("Transpose", [y], "transpose", perm=[0, 3, 1, 2])
            x = net.node("Add", [x, y], "add")
    x = net.node("GlobalAveragePool", [x], "gap")
    x = net.node("Flatten", [ln2d(x, dims[-1])], "flatten", axis=1)
    x = net.gemm(x, dims[-1], 1000)
    return net.model(_name("convnext", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# Vision transformer


def vit(Net, seed, slice_, shapes_only):
    """ViT-Tiny/16 (D 192, 12 pre-LN layers, 3 heads, MLP 768) on 224x224:
    16x16/16 patch conv, Reshape [1,D,N] + Transpose to [1,N,D], Concat of a
    class-token constant, position-embedding Add, blocks of LayerNorm, QKV
    Linear, Reshape [1,N,3,H,dh] + Transpose + Split/Squeeze (unbind),
    Q.K^T, Div by sqrt(dh), Softmax, .V, heads merged, projection, residual,
    LayerNorm, MLP with GELU (Erf), residual; final LayerNorm, Gather of the
    class token (index 0, axis 1), Linear. small: D 64, 2 layers, 2 heads,
    8x8 patches on 32x32."""
    net = _net(Net, seed, shapes_only)
    np = net.np
    if slice_ == "full":
        img, patch, D, L, NH = 224, 16, 192, 12, 3
    else:
        img, patch, D, L, NH = 32, 8, 64, 2, 2
    in_shape = [1, 3, img, img]
    DH, FF = D // NH, 4 * D
    g = img // patch
    N = g * g + 1
    x = net.cv("input", 3, D, patch, stride=patch, pad=0)
    x = net.node("Reshape", [x, net.i64([1, D, g * g])], "reshape")
    x = net.node("Transpose", [x], "transpose", perm=[0, 2, 1])
    cls = net.const("class_token", (0.1 * net.rng.standard_normal((1, 1, D))).astype(np.float32))
    x = net.node("Concat", [cls, x], "concat", axis=1)
    pos = net.const("pos_embedding", (0.1 * net.rng.standard_normal((1, N, D))).astype(np.float32))
    x = net.node("Add", [x, pos], "add")
    axis0 = net.i64([0])
    for _ in range(L):
        h = net.ln(x, D, 1e-6)
        qkv = net.linear(h, D, 3 * D)
        qkv = net.node("Reshape", [qkv, net.i64([1, N, 3, NH, DH])], "reshape")
        qkv = net.node("Transpose", [qkv], "transpose", perm=[2, 0, 3, 1, 4])
        parts = net.multi("Split", [qkv, net.i64([1, 1, 1])], 3, "split", axis=0)
        q, k, v = (net.node("Squeeze", [p, axis0], "squeeze") for p in parts)
        k = net.node("Transpose", [k], "transpose", perm=[0, 1, 3, 2])
        s = net.node("MatMul", [q, k], "scores")
        s = net.node("Div", [s, net.f32("sqrt_dh", math.sqrt(DH))], "scale")
        p = net.node("Softmax", [s], "softmax", axis=-1)
        a = net.node("MatMul", [p, v], "context")
        a = net.node("Transpose", [a], "transpose", perm=[0, 2, 1, 3])
        a = net.node("Reshape", [a, net.i64([1, N, D])], "reshape")
        x = net.node("Add", [x, net.linear(a, D, D, gain=0.5)], "residual")
        h = net.gelu(net.linear(net.ln(x, D, 1e-6), D, FF))
        x = net.node("Add", [x, net.linear(h, FF, D, gain=0.5)], "residual")
    x = net.ln(x, D, 1e-6)
    x = net.node("Gather", [x, net.const("index", np.array(0, np.int64))], "gather", axis=1)
    x = net.gemm(x, D, 1000)
    return net.model(_name("vit", slice_), "input", in_shape, x, [1, 1000])


# --------------------------------------------------------------------------
# Transformer encoder (dynamo export)


def encoder(Net, seed, slice_, shapes_only):
    """Four nn.TransformerEncoderLayer(384, 6 heads, FFN 1536, ReLU,
    batch_first, post-LN) as torch.onnx.export(dynamo=True) writes them once
    its optimizer has folded the constant shapes: Transpose to [L,1,D], the
    packed in-projection (MatMul + Add), unflatten/unsqueeze/transpose/
    squeeze of the stacked QKV (Reshape [L,1,3,D], Unsqueeze, Transpose,
    Squeeze) and Gather 0/1/2 on axis 0 for the unbind, Reshape + Transpose
    into heads, scaled_dot_product_attention as the torchlib decomposition
    (Q and K^T each multiplied by 1/sqrt(sqrt(dh)), K transposed through
    Reshape [-1,L,dh] -> Transpose -> Reshape), Softmax, MatMul, heads merged
    to [L,D], output projection as Gemm(transB=1), Transpose back, residual
    Add, LayerNormalization, FFN (MatMul + Add, Relu, MatMul + Add),
    residual Add, LayerNormalization. small: 16 tokens (full: 128)."""
    net = _net(Net, seed, shapes_only)
    np = net.np
    L = 128 if slice_ == "full" else 16
    D, NH, FF, LAYERS = 384, 6, 1536, 4
    DH = D // NH
    in_shape = [1, L, D]
    x = "input"
    sqrt_scale = math.sqrt(1.0 / math.sqrt(DH))
    for _ in range(LAYERS):
        t = net.node("Transpose", [x], "transpose", perm=[1, 0, 2])  # [L, 1, D]
        proj = net.linear(t, D, 3 * D)  # [L, 1, 3D]
        proj = net.node("Reshape", [proj, net.i64([L, 1, 3, D])], "view")
        proj = net.node("Unsqueeze", [proj, net.i64([0])], "unsqueeze")  # [1, L, 1, 3, D]
        proj = net.node("Transpose", [proj], "transpose", perm=[3, 1, 2, 0, 4])  # [3, L, 1, 1, D]
        proj = net.node("Squeeze", [proj, net.i64([3])], "squeeze")  # [3, L, 1, D]
        heads = []
        for i in range(3):
            h = net.node("Gather", [proj, net.const("index", np.array(i, np.int64))], "select", axis=0)
            h = net.node("Reshape", [h, net.i64([L, NH, DH])], "view")
            h = net.node("Transpose", [h], "transpose", perm=[1, 0, 2])  # [NH, L, DH]
            heads.append(net.node("Reshape", [h, net.i64([1, NH, L, DH])], "view"))
        q, k, v = heads
        q = net.node("Mul", [q, net.f32("sqrt_scale", sqrt_scale)], "mul")
        k = net.node("Reshape", [k, net.i64([-1, L, DH])], "reshape")
        k = net.node("Transpose", [k], "transpose", perm=[0, 2, 1])
        k = net.node("Reshape", [k, net.i64([1, NH, DH, L])], "reshape")
        k = net.node("Mul", [k, net.f32("sqrt_scale", sqrt_scale)], "mul")
        p = net.node("Softmax", [net.node("MatMul", [q, k], "matmul")], "softmax", axis=-1)
        a = net.node("MatMul", [p, v], "matmul")  # [1, NH, L, DH]
        a = net.node("Transpose", [a], "permute", perm=[2, 0, 1, 3])  # [L, 1, NH, DH]
        a = net.node("Reshape", [a, net.i64([L, D])], "view")
        a = net.gemm(a, D, D, gain=0.5)
        a = net.node("Reshape", [a, net.i64([L, 1, D])], "view")
        a = net.node("Transpose", [a], "transpose", perm=[1, 0, 2])
        x = net.ln(net.node("Add", [x, a], "add"), D)
        f = net.relu(net.linear(x, D, FF))
        f = net.linear(f, FF, D, gain=0.5)
        x = net.ln(net.node("Add", [x, f], "add"), D)
    return net.model(_name("encoder", slice_), "input", in_shape, x, in_shape)


# --------------------------------------------------------------------------
# LR-ASPP segmentation


def lraspp(Net, seed, slice_, shapes_only):
    """LR-ASPP on MobileNetV3-Large (torchvision lraspp_mobilenet_v3_large,
    21 classes): the backbone with its last three blocks dilated (stride 16),
    the low-level feature after the first stride-8 block (40 channels); head:
    1x1 conv + ReLU on the high feature times Sigmoid(1x1 conv(pool)), Resize
    (linear, half_pixel, to the low feature's size), Add with a 1x1
    classifier of the low feature, Resize to the input size. small: the
    mobilenetv3 small slice's blocks on 64x64, not dilated."""
    net = _net(Net, seed, shapes_only)
    np = net.np
    classes, inter = 21, 128
    in_shape = _image(224, 64, slice_)
    img = in_shape[2]
    tap = 3  # the first stride-8 block (24 -> 40)
    x, c, low = _mnv3_backbone(net, slice_, dilated=(slice_ == "full"), tap=tap)
    low_hw, high_hw = img // 8, img // 16
    a = net.cna(x, c, inter, 1)
    s = net.node("GlobalAveragePool", [x], "gap")
    s = net.act(net.cv(s, c, inter, 1, bias=False), "sigmoid")
    a = net.node("Mul", [a, s], "mul")

    def resize(t, ch, hw):
        sizes = net.const("sizes", np.array([1, ch, hw, hw], np.int64))
        return net.node("Resize", [t, "", "", sizes], "resize", coordinate_transformation_mode="half_pixel",
                        cubic_coeff_a=-0.75, mode="linear", nearest_mode="floor")

    assert high_hw * 2 == low_hw
    a = resize(a, inter, low_hw)
    y = net.node("Add", [net.cv(low, 40, classes, 1), net.cv(a, inter, classes, 1)], "add")
    y = resize(y, classes, img)
    return net.model(_name("lraspp", slice_), "input", in_shape, y, [1, classes, img, img])


BUILDERS = {
    "resnext": resnext,
    "regnet": regnet,
    "efficientnet": efficientnet,
    "mobilenetv3": mobilenetv3,
    "squeezenet": squeezenet,
    "googlenet": googlenet,
    "densenet": densenet,
    "shufflenet": shufflenet,
    "convnext": convnext,
    "vit": vit,
    "encoder": encoder,
    "lraspp": lraspp,
}


def float_model(Net, name, slice_, seed, shapes_only=False):
    if slice_ not in SLICES:
        raise ValueError(slice_)
    return BUILDERS[name](Net, seed, slice_, shapes_only)

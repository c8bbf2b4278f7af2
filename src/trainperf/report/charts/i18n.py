"""Figure languages: every string a reader sees in a figure, in English or Japanese.

Charts are built once, in English; :func:`localize` turns the Vega-Lite spec into another language:

* titles and subtitles (chart, axis, legend, facet header) are translated;
* label *values* in the data (legend entries, facet headers, category labels such as
  "against Eos's measured result" or "all sizes") are translated in the columns whose name ends in
  ``_label`` (:data:`LABEL_SUFFIX`): chart functions put every text a reader sees into such a
  column; other data (system names, job states, numbers) are left as they are;
* scale domains and sort orders, and string literals inside ``labelExpr``, ``test``, ``calculate``
  and ``filter`` expressions, are translated with the same table, so that a translated value still
  meets its colour, its order and its condition;
* ``config.locale`` gets the language's d3 number and time locale (month names), and
  ``config.font`` the language's font.

Translation is by the table :data:`JA`: an exact entry wins; otherwise every phrase of the table found
in the text (on word boundaries, longest first) is replaced. Anything with no entry stays as it is,
which the tests catch by reading every text element of every Japanese figure.
"""

from __future__ import annotations

import functools
import re

import vl_convert as vlc

from trainperf.report.charts.theme import FONT

__all__ = ["FONTS", "JA", "LABEL_SUFFIX", "localize", "translate"]

#: Font of each figure language. Japanese needs a CJK font named explicitly: with a generic family
#: vl-convert falls back to a face without the glyphs. This is the preferred face;
#: :func:`trainperf.report.charts.fonts.find_cjk_font` picks the one installed.
FONTS = {"en": FONT, "ja": "Noto Sans CJK JP"}

#: Data columns whose name ends with this hold label text and are translated.
LABEL_SUFFIX = "_label"

#: d3 locale of each language (vl-convert's names), for month names and number formats.
LOCALES = {"ja": "ja-JP"}

# English -> Japanese. Proper names (systems, models, GPUs, DCGM fields, MLPerf, Slurm states) and
# units stay as they are.
JA: dict[str, str] = {
    # --- benchmarks, MLPerf runs ---
    "time to train per run; black tick: MLPerf score (olympic mean)": "実行ごとの学習時間 (黒線: MLPerf スコア、オリンピック平均)",
    "evaluation curve (dashed: convergence target)": "評価曲線 (破線: 収束目標)",
    "time to train (minutes, log scale)": "学習時間 (分、対数目盛)",
    "time to train (minutes)": "学習時間 (分)",
    "time to train (min, log scale)": "学習時間 (分、対数目盛)",
    "time to train (min)": "学習時間 (分)",
    "time to train by scale": "規模別の学習時間",
    # energy to train (charts.energy)
    "energy to train against time to train": "学習時間に対する学習エネルギー",
    "energy to train (kWh)": "学習エネルギー (kWh)",
    "MLPerf power result": "MLPerf 電力測定結果",
    "energy at the nodes' power supplies by the MLPerf power rules, with the interconnect estimate": "MLPerf 電力ルールによるノード電源でのエネルギー (インターコネクト推定値を含む)",
    "dots: runs; diamond: score (olympic mean); axes from zero": "点: 各実行; ひし形: スコア (オリンピック平均); 軸は 0 から",
    "dashed line: time to train of an evaluated cluster without an energy figure": "破線: エネルギー値のない評価対象クラスタの学習時間",
    "no energy measured": "エネルギー測定なし",
    # the MLPerf record by scale (charts.record)
    "every published result by scale": "公開済み全結果の規模別比較",
    "every MLPerf Training round in the record": "記録にある全 MLPerf Training ラウンド",
    "closed and open division; both axes log scale": "クローズド部門とオープン部門; 両軸とも対数目盛",
    "colour: accelerator generation; shape: network family (from the systems' descriptions)": "色: アクセラレータ世代; 形: ネットワークの種類 (システム記述から)",
    "large outlined marks: the evaluated results": "縁取りの大きな記号: 評価対象の結果",
    "GPU-minutes to train (GPUs × time to train, log scale)": "学習 GPU 分 (GPU 数 × 学習時間、対数目盛)",
    "GPUs (log scale)": "GPU 数 (対数目盛)",
    "accelerator generation": "アクセラレータ世代",
    "network": "ネットワーク",
    "NVLink only": "NVLink のみ",
    "other": "その他",
    # strong scaling (charts.scaling)
    "GPU-hours to train by scale": "規模別の学習 GPU 時間",
    "GPU-hours to train (GPUs × time to train)": "学習 GPU 時間 (GPU 数 × 学習時間)",
    "flat = perfect strong scaling; filled mark: from its MLPerf logs,": "水平 = 理想的なストロングスケーリング; 塗りつぶし: MLPerf ログから算出,",
    "hollow mark: transcribed, not recomputed; axis from zero": "白抜き: 転記値 (再計算なし); 軸は 0 から",
    "marks that would overlap are set side by side": "重なる点は左右にずらして表示",
    "run status": "実行状態",
    "success": "成功",
    "aborted": "中断",
    "failed": "失敗",
    "tokens trained": "学習トークン数",
    "samples trained": "学習サンプル数",
    "log perplexity": "対数パープレキシティ",
    "evaluation loss": "評価損失",
    "evaluation metric": "評価指標",
    "convergence target": "収束目標",
    "result folder": "結果フォルダ",
    "GPUs": "GPU",
    # --- comparison with Eos ---
    "GPU-minutes (lower = more efficient per GPU; axis from zero)": "GPU 分 (小さいほど GPU あたり効率的、軸は 0 から)",
    "GPU-minutes = time to train × GPUs": "GPU 分 = 学習時間 × GPU 数",
    "Per-GPU efficiency against Eos": "Eos に対する GPU あたり効率",
    "GPU-minutes ratio, evaluated / Eos (1.0 = equal; above 1 = slower per GPU)": "GPU 分の比、評価対象 / Eos (1.0 = 同等、1 より上 = GPU あたり遅い)",
    "ratio on a scale centred on 1.0; dashed: the quoted ratio": "比は 1.0 を中心とする目盛; 破線: 講演の比",
    "ratio on a scale centred on 1.0": "比は 1.0 を中心とする目盛",
    "reference": "参照",
    "against Eos's extrapolated result": "Eos の外挿値に対して",
    "against Eos's measured result": "Eos の実測値に対して",
    "reference measured at this GPU count": "同じ GPU 数で実測した参照値",
    "reference interpolated (power law between two measured scales)": "参照値を補間 (前後 2 つの実測規模を通るべき乗則)",
    "reference extrapolated beyond its largest run: ratio at most this": "最大の実測規模から参照値を外挿: 比はこの値以下",
    "reference extrapolated below its smallest run: ratio at least this": "最小の実測規模から参照値を外挿: 比はこの値以上",
    "another accelerator generation, measured at this GPU count": "別世代のアクセラレータ、同じ GPU 数で実測",
    "no point estimate: bounds from measured scales more than 4x apart": "点推定なし: 4 倍を超えて離れた実測規模からの上下限",
    "bound from the largest measured scale below: ratio at most this": "下側で最大の実測規模からの限界: 比はこの値以下",
    "bound from the smallest measured scale above: ratio at least this": "上側で最小の実測規模からの限界: 比はこの値以上",
    "GPU-time ratio at equal GPU count": "同じ GPU 数での GPU 時間比",
    "against Eos's measured result of another MLPerf round": "Eos の別ラウンドの実測値に対して",
    "GPU-minutes ratio, evaluated / Eos": "GPU 分の比、評価対象 / Eos",
    "1.0 = equal; above 1 = slower per GPU; ratio on a scale centred on 1.0; dashed: the quoted ratio": "1.0 = 同等、1 より上 = GPU あたり遅い。比は 1.0 を中心とする目盛、破線は講演の比",
    "1.0 = equal; above 1 = slower per GPU; ratio on a scale centred on 1.0": "1.0 = 同等、1 より上 = GPU あたり遅い。比は 1.0 を中心とする目盛",
    "the quoted ratio": "講演の比",
    "above 1.0: more GPU time than Eos for the same training": "1.0 より上: 同じ学習に Eos より多くの GPU 時間",
    "dashed line: the ratio quoted in the talk, with no stated definition": "破線: 講演の比 (定義は公開されていない)",
    "the bar compares with": "棒の比較相手",
    "against Eos's measured result, same MLPerf round": "Eos の同じラウンドの実測値に対して",
    "against Eos's measured result of an older MLPerf round": "Eos の古いラウンドの実測値に対して",
    "unconfirmed: the evaluated time equals an Eos score": "未確認: 評価対象の時間が Eos のスコアと一致",
    "against an Eos time extrapolated from 64 nodes": "64 ノードから外挿した Eos の時間に対して",
    "parity with Eos": "Eos と同等",
    "every model drawn with the same recipe, 18 B per parameter": "すべてのモデルを同じレシピ (パラメータあたり 18 B) で描画",
    "* DeepSeek-V3: trained in FP8 with BF16 Adam moments (its technical report, §3.3), so its own model state is smaller": "* DeepSeek-V3: FP8 で学習し Adam のモーメントは BF16 (技術報告 §3.3)。実際のモデル状態はこれより小さい",
    "definition not stated": "定義は公開されていない",
    "GPU-time ratio, evaluated / Eos": "GPU 時間の比、評価対象 / Eos",
    "filled mark: recomputed from its MLPerf logs; hollow mark: transcribed": "塗りつぶし: MLPerf ログから再計算; 白抜き: 転記値",
    "talk": "講演",
    "unverified": "未検証",
    "system and MLPerf round": "システムと MLPerf ラウンド",
    "system": "システム",
    "MLPerf round": "MLPerf ラウンド",
    "nodes (8 GPUs each)": "ノード数 (各 8 GPU)",
    "nodes": "ノード数",
    "model FLOPs utilization by scale (step level)": "規模別のモデル FLOPs 利用率 (ステップ単位)",
    "MFU (model FLOPs / dense peak)": "MFU (モデル FLOPs / 密行列ピーク)",
    "MFU against": "MFU の分母",
    "dense peak": "密行列ピーク",
    "the precision the runs used": "実行で使った精度",
    "precision the runs used": "実行で使った精度",
    "model FLOPs": "モデル FLOPs",
    "the run's precision": "実行の精度",
    "primary": "主",
    "secondary, for comparison": "副、比較用",
    "the other precision": "もう一方の精度",
    "solid: the precision the runs used; dashed: the other precision, for comparison": "実線: 実行で使った精度、破線: もう一方の精度 (比較用)",
    # --- memory ---
    "model state per GPU against node count": "ノード数ごとの GPU あたりモデル状態",
    "model state per GPU (GB, log scale)": "GPU あたりモデル状態 (GB、対数目盛)",
    "model state per GPU (GB)": "GPU あたりモデル状態 (GB)",
    "sharding": "分割方法",
    "evenly over all GPUs": "全 GPU に均等",
    "TP x PP x ZeRO-1 layout": "TP x PP x ZeRO-1 配置",
    "GPU memory": "GPU メモリ",
    "B/param model state": "B/パラメータのモデル状態",
    "dashed: memory of one GPU": "破線: GPU 1 基のメモリ",
    "Memory wall: model state against the memory of one accelerator": "メモリの壁: モデル状態とアクセラレータ 1 基のメモリ",
    "model state": "モデル状態",
    "bytes per parameter": "バイト/パラメータ",
    "memory of one accelerator": "アクセラレータ 1 基のメモリ",
    "bytes (log scale)": "バイト (対数目盛)",
    "year": "年",
    "what": "対象",
    # --- telemetry ---
    "Tensor-core activity over the MLPerf GPT-3 run": "MLPerf GPT-3 実行中の Tensor コア活動率",
    "Tensor-core activity, real capture": "Tensor コア活動率 (実測)",
    "Tensor-core activity per GPU over time": "GPU ごとの Tensor コア活動率の推移",
    "GPU activity by MLPerf phase": "MLPerf のフェーズ別 GPU 活動",
    "Per-rail throughput in the training blocks": "学習ブロック中のレールごとのスループット",
    "median and 5-95 % over GPUs": "GPU 間の中央値と 5-95 %",
    "median and 5-95 % over samples": "サンプル間の中央値と 5-95 %",
    "whiskers 5-95 %, box 25-75 %, line median": "ひげ 5-95 %、箱 25-75 %、線は中央値",
    "one column per MLPerf phase, on the sample grid": "MLPerf のフェーズごとに 1 列、サンプル時刻に整列",
    "one column per": "1 列 =",
    "samples": "サンプル",
    "one point per node": "ノードごとに 1 点",
    "tensor-pipe active": "Tensor パイプ活動率",
    "Tensor active (ratio)": "Tensor 活動率 (比)",
    "SM active (ratio)": "SM 活動率 (比)",
    "DRAM active (ratio)": "DRAM 活動率 (比)",
    "Power (W)": "消費電力 (W)",
    "SM clock (MHz)": "SM クロック (MHz)",
    "MLPerf phase": "MLPerf のフェーズ",
    "phase kind": "フェーズ種別",
    "phase": "フェーズ",
    "init": "初期化",
    "train": "学習",
    "eval": "評価",
    "time (UTC)": "時刻 (UTC)",
    "GPU (host/gpu)": "GPU (ホスト/GPU)",
    "rows": "行",
    "rail (NIC i serves GPU i)": "レール (NIC i が GPU i を担当)",
    "within range": "範囲内",
    "below half of its node's median": "ノードの中央値の半分未満",
    "SYNTHETIC data": "合成データ",
    "smoke run": "スモーク実行",
    # --- profiler traces ---
    "Where the GPU time of each profiled step goes": "プロファイルした各ステップの GPU 時間の内訳",
    "share of the step's GPU time": "ステップの GPU 時間に占める割合",
    "profiler step": "プロファイラのステップ",
    "what runs": "実行中の処理",
    "compute kernels": "計算カーネル",
    "communication, not overlapped": "通信 (計算と重ならない部分)",
    "memory copies and sets": "メモリのコピーと設定",
    "other GPU activity": "その他の GPU 処理",
    "GPU idle": "GPU アイドル",
    "rank": "ランク",
    "step": "ステップ",
    "(last)": "(最後)",
    "Trace and DCGM over the same seconds": "同じ時間帯のトレースと DCGM",
    "one dot per telemetry sample; black tick: mean": "テレメトリのサンプルごとに 1 点、黒線: 平均",
    "share of the window": "時間窓に占める割合",
    "trace: any GPU activity": "トレース: GPU 処理あり",
    "trace: compute kernels": "トレース: 計算カーネル",
    "trace: GEMM and attention kernels": "トレース: GEMM とアテンションのカーネル",
    "DCGM: graphics engine active": "DCGM: グラフィックスエンジン活動率",
    "DCGM: SM active": "DCGM: SM 活動率",
    "DCGM: tensor pipe active": "DCGM: Tensor パイプ活動率",
    # --- reliability (operations chapter) ---
    "Failed jobs by job size": "ジョブ規模別の失敗ジョブ",
    "job size (GPUs)": "ジョブ規模 (GPU 数)",
    "how the job failed": "失敗の種類",
    "user failure": "ユーザー起因の失敗",
    "infrastructure failure": "インフラ起因の失敗",
    "timeout": "時間切れ",
    "Mean time to failure by job size": "ジョブ規模別の平均故障間隔 (MTTF)",
    "projected: MTTF per node / nodes": "予測: ノードあたり MTTF ÷ ノード数",
    "in the accounting (95 % interval)": "会計情報の値 (95 % 区間)",
    "job size (nodes, log scale)": "ジョブ規模 (ノード数、対数目盛)",
    "MTTF of a job (hours, log scale)": "ジョブの MTTF (時間、対数目盛)",
    "Expected ETTR against the checkpoint interval": "チェックポイント間隔と期待 ETTR",
    "dot: the best interval of each size (Young 1974)": "点: 各規模の最適間隔 (Young 1974)",
    "checkpoint interval (hours, log scale)": "チェックポイント間隔 (時間、対数目盛)",
    "expected ETTR": "期待 ETTR",
    # --- operations (Slurm) ---
    "Jobs and GPU-hours by final job state": "最終状態別のジョブ数と GPU 時間",
    "Jobs and GPU-hours by job size": "ジョブ規模別のジョブ数と GPU 時間",
    "Run time of successful jobs": "成功したジョブの実行時間",
    "Histogram": "ヒストグラム",
    "Cumulative share by job size": "ジョブ規模別の累積割合",
    "GPU-hours per day by job size": "ジョブ規模別の 1 日あたり GPU 時間",
    "GPU-hours per week by job size": "ジョブ規模別の 1 週間あたり GPU 時間",
    "GPU-hours per month by job size": "ジョブ規模別の 1 か月あたり GPU 時間",
    "GPU-hours per day": "1 日あたり GPU 時間",
    "GPU-hours per week": "1 週間あたり GPU 時間",
    "GPU-hours per month": "1 か月あたり GPU 時間",
    "share of jobs with run time ≤ x": "実行時間が x 以下のジョブの割合",
    "share of successful jobs": "成功したジョブの割合",
    "share of GPU-hours": "GPU 時間の割合",
    "share of jobs": "ジョブ数の割合",
    "share": "割合",
    "final state": "最終状態",
    "job size (nodes)": "ジョブ規模 (ノード数)",
    "job size": "ジョブ規模",
    "all sizes": "全規模",
    "1 node": "1 ノード",
    "2 nodes": "2 ノード",
    "3-4 nodes": "3-4 ノード",
    "5-16 nodes": "5-16 ノード",
    "17-32 nodes": "17-32 ノード",
    ">32 nodes": ">32 ノード",
    "run time (log scale)": "実行時間 (対数目盛)",
    "1 min": "1 分",
    "10 min": "10 分",
    "1 h": "1 時間",
    "6 h": "6 時間",
    "1 d": "1 日",
    "1 wk": "1 週",
    "30 d": "30 日",
    # d3 time formats inside label expressions (month names come from the locale)
    "%b %Y": "%Y年%b",
}


# the node axis of a cluster of any GPUs per node (a GB200/GB300 NVL72 tray: 4; HGX, OAM: 8)
JA |= {
    f"nodes ({g} GPU{'s' if g != 1 else ''} each)": f"ノード数 (各 {g} GPU)"
    for g in (1, 2, 4, 8, 16)
}


def translate(text, lang: str):
    """``text`` (a string or a list of strings; anything else as is) in ``lang`` (see the module doc)."""
    if lang == "en":
        return text
    if isinstance(text, list):
        return [translate(t, lang) for t in text]
    if not isinstance(text, str):
        return text
    table = _tables(lang)
    if text in table:
        return table[text]
    return _pattern(lang).sub(lambda m: table[m.group(0)], text)


def _tables(lang: str) -> dict[str, str]:
    if lang == "ja":
        return JA
    raise ValueError(f"unknown figure language {lang!r}; known: {sorted(FONTS)}")


@functools.cache
def _pattern(lang: str) -> re.Pattern:
    keys = sorted(_tables(lang), key=len, reverse=True)
    # phrases match on word boundaries only ("train" never inside "training", "other" never inside
    # a key such as "96|measured_other": translated, the Japanese bars' sort order lost that slot)
    return re.compile("|".join(rf"(?<![A-Za-z_]){re.escape(k)}(?![A-Za-z_])" for k in keys))


_LITERAL = re.compile(r"(['\"])((?:(?!\1).)*)\1")
_EXPR_KEYS = ("labelExpr", "test", "calculate", "filter", "expr")


def _translate_expr(expr: str, lang: str) -> str:
    return _LITERAL.sub(lambda m: m.group(1) + translate(m.group(2), lang) + m.group(1), expr)


def _copy(node, key=None):
    """A copy of a spec in which every dict and list is new, except data records: the lists of
    ``datasets`` and ``data.values`` are new lists of the same record dicts (never modified:
    :func:`localize` replaces a record it translates; copying 10^5 heatmap cells costs seconds)."""
    if isinstance(node, dict):
        if key == "datasets":
            return {name: list(records) for name, records in node.items()}
        return {k: _copy(v, k) for k, v in node.items()}
    if isinstance(node, list):
        if key == "values":
            return list(node)
        return [_copy(v) for v in node]
    return node


def localize(spec: dict, lang: str, font: str | None = None) -> dict:
    """Return a copy of a Vega-Lite ``spec`` with every label in ``lang`` and that language's font.

    Args:
        spec: ``chart.to_dict()``.
        lang: ``"en"`` (returned unchanged, as a copy) or ``"ja"``.
        font: the font family; default :data:`FONTS` ``[lang]``.

    Raises:
        ValueError: an unknown language.
    """
    if lang not in FONTS:
        raise ValueError(f"unknown figure language {lang!r}; known: {sorted(FONTS)}")
    out = _copy(spec)
    if lang == "en":
        return out

    def rows(records):
        # the records of one dataset share their columns: look for label columns once
        first = records[0] if records and isinstance(records[0], dict) else {}
        labels = [f for f in first if f.endswith(LABEL_SUFFIX)]
        if not labels:
            return
        for i, rec in enumerate(records):
            if isinstance(rec, dict):
                records[i] = {**rec, **{f: translate(rec[f], lang) for f in labels if f in rec}}

    def walk(node, parent=None):
        if isinstance(node, list):
            for item in node:
                walk(item, parent)
            return
        if not isinstance(node, dict):
            return
        for key, val in node.items():
            if key in ("title", "subtitle") and isinstance(val, (str, list)):
                node[key] = translate(val, lang)
            elif key == "title" and isinstance(val, dict):
                for k in ("text", "subtitle"):
                    if k in val:
                        val[k] = translate(val[k], lang)
                walk(val, key)
            elif key in ("domain", "sort") and isinstance(val, list):
                node[key] = translate(val, lang)
            elif key in _EXPR_KEYS and isinstance(val, str):
                node[key] = _translate_expr(val, lang)
            elif key == "values" and parent == "data" and isinstance(val, list):
                rows(val)
            elif key == "datasets" and isinstance(val, dict):
                for records in val.values():
                    rows(records)
            else:
                walk(val, key)

    walk(out)
    config = out.setdefault("config", {})
    config["font"] = font or FONTS[lang]
    if lang in LOCALES:
        config["locale"] = {
            "number": vlc.get_format_locale(LOCALES[lang]),
            "time": vlc.get_time_format_locale(LOCALES[lang]),
        }
    return out

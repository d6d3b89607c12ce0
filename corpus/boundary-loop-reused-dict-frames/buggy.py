"""sglang#1464, the request builder before the fix: one frame dict made before the loop, its URL set
per frame and the dict appended, so the message carries the last frame at every position."""


def encode(frame):
    return f"data:image/jpeg;base64,{frame}"  # stands in for the JPEG/base64 encoding of a frame


def video_content(frames):
    content = [{"type": "text", "text": "Describe the video."}]
    frame_format = {"type": "image_url", "image_url": {"url": None}, "modalities": "video"}
    for frame in frames:
        frame_format["image_url"]["url"] = encode(frame)
        content.append(frame_format)
    return content


content = video_content([f"frame-{i}" for i in range(4)])
urls = [part["image_url"]["url"] for part in content[1:]]
print("urls:", urls)
assert len(set(urls)) == 1, "the bug did not reproduce"
